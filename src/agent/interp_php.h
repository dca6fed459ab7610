/* SPDX-License-Identifier: Apache-2.0 */
/*
 * interp_php.h - the decoders of PHP's files and in-memory data that
 * interp_php.c uses (defined in interp_php_decode.c, which needs only
 * base/, so the unit test and the fuzz target link it alone; the runtime
 * itself is agent_interp_php, interp.h).
 *
 * Layout facts are PHP 8.2 non-ZTS x86-64, checked against Debian's
 * php8.2-cli (8.2.36) by reading a running php8.2's memory
 * (process_vm_readv) from executor_globals down; interp_php.c has how.
 */
#ifndef PROF_AGENT_INTERP_PHP_H
#define PROF_AGENT_INTERP_PHP_H

#include "base/compat.h"
#include "agent/interp.h"

#define AGENT_PHP_ZSTR_LEN	   16  /* zend_string.len (size_t) */
#define AGENT_PHP_ZSTR_VAL	   24  /* zend_string.val[] */
#define AGENT_PHP_FN_SCOPE	   16  /* zend_function.common.scope (zend_class_entry *) */
#define AGENT_PHP_CE_NAME	   8   /* zend_class_entry.name (zend_string *) */
#define AGENT_PHP_OP_FILENAME	   152 /* zend_op_array.filename (zend_string *) */
#define AGENT_PHP_OP_LINESTART	   160 /* zend_op_array.line_start (u32) */
#define AGENT_PHP_FN_HEAD_INTERNAL 24  /* bytes of a zend_function read: type, name, scope */
#define AGENT_PHP_FN_HEAD_USER	   164 /* ... and up to line_start for user code */
#define AGENT_PHP_NAME_MAX	   256 /* bytes of a name kept (longer ones are cut) */

/**
 * agent_php_match() - whether a mapped file's base name @base may be a
 * PHP runtime: php, php-fpm, php-cgi, each with an optional version of
 * digits and dots (php8.2, php-fpm8.2), or libphp*.so* (the Apache
 * module, libphp8.2.so). Other names (phpize, php.ini) are not.
 */
bool agent_php_match(const char *base);

/**
 * agent_php_version() - the version after "X-Powered-By: PHP/" in @buf
 * (@n bytes: a file's contents; the string is in .rodata of every PHP
 * SAPI, main/SAPI.c). Writes "8.2.36" (digits and dots, at most @max - 1
 * bytes) to @out and sets *@major, *@minor. 0, or -ENOENT when the string
 * is not there or no "MAJOR.MINOR" follows it.
 */
int agent_php_version(const uint8_t *buf, size_t n, char *out, size_t max, int *major, int *minor);

/**
 * struct agent_php_func - the fields of one zend_function naming needs:
 * @type (1 internal, 2 user, 4 eval), remote addresses of its @name,
 * @scope (its class, 0 = none) and, for user and eval code, @filename;
 * @line_start (0 for internal functions); @check = PHP_FUNC_CHECK of
 * them, the value BPF sent for the same function.
 */
struct agent_php_func {
	uint8_t type;
	uint64_t name, scope, filename;
	uint32_t line_start;
	uint32_t check;
};

/**
 * agent_php_func_decode() - decode the first @n bytes @head of a
 * zend_function (AGENT_PHP_FN_HEAD_INTERNAL at least; for user and eval
 * code AGENT_PHP_FN_HEAD_USER). 0; -PROF_ECORRUPT for another type;
 * -EAGAIN when @n is too short for its type (read more and call again).
 */
int agent_php_func_decode(const uint8_t *head, size_t n, struct agent_php_func *out);

/**
 * agent_php_read_zstr() - the zend_string at remote @addr through @mem
 * into @out (@max >= 1 bytes with the NUL; a longer string is cut, an
 * embedded NUL ends it). 0; -EFAULT when unreadable or @addr is 0;
 * -PROF_ECORRUPT for a length over 1 MiB.
 */
int agent_php_read_zstr(const struct agent_memreader *mem, uint64_t addr, char *out, size_t max);

/**
 * agent_php_describe() - name the zend_function at remote @addr whose
 * check value BPF read as @check: writes its display name to @name
 * (@max bytes: "func", "Class::method", "{closure}", "<main>" for a
 * file's top-level code, "<eval>" for eval'd code's), its file to @file
 * ("" for an internal function) and its first line to *@line_start.
 * 0, -EFAULT, -ESTALE (the check value differs: another function lives
 * there now), -PROF_ECORRUPT (fields that make no sense).
 */
int agent_php_describe(const struct agent_memreader *mem, uint64_t addr, uint32_t check, char *name,
		       char *file, size_t max, uint32_t *line_start);

#endif
