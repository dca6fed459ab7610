// SPDX-License-Identifier: Apache-2.0

// gotrace - a net/http server whose handlers run under pprof.Do with the
// labels tracing integrations set (trace_id, span_id, span_name), and a
// client that drives it; for tests/integration/test_agent_trace.sh.
//
//	gotrace server ADDR        serve /alpha, /beta (CPU) and /io (blocked)
//	gotrace client URL N MS    N requests alternating /alpha and /beta,
//	                           each MS ms of CPU (the third with 24 more
//	                           labels, "/alpha+24labels"); then two /io
//	                           requests
//
// Each request carries its own trace and span IDs (query parameters
// trace, span). A CPU handler pins its goroutine to its thread and spins
// until the thread's own CPU clock (CLOCK_THREAD_CPUTIME_ID) has advanced
// by MS ms, then answers with that measured time in X-Cpu-Ns. /io blocks
// its thread for about 300 ms in read(2) on a blocking pipe that another
// goroutine writes to later: an off-CPU sleep inside the span. The client
// prints one line per request: "<path> <trace> <span> <cpu ns>".
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in ns.
func threadCPU() int64 {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

var sink uint64

//go:noinline
func spinAlpha(until int64, start int64) {
	x := sink
	for threadCPU()-start < until {
		for i := 0; i < 20000; i++ {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	sink = x
}

//go:noinline
func spinBeta(until int64, start int64) {
	x := sink
	for threadCPU()-start < until {
		for i := 0; i < 20000; i++ {
			x ^= x<<13 + 7
			x ^= x >> 7
		}
	}
	sink = x
}

//go:noinline
func blockOnPipe() {
	var fds [2]int
	if err := syscall.Pipe(fds[:]); err != nil {
		panic(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		syscall.Write(fds[1], []byte{1})
	}()
	var b [1]byte
	syscall.Read(fds[0], b[:]) // a blocking fd: the thread sleeps in read(2)
	syscall.Close(fds[0])
	syscall.Close(fds[1])
}

func traced(w http.ResponseWriter, r *http.Request, work func() int64) {
	q := r.URL.Query()
	kv := []string{"trace_id", q.Get("trace"), "span_id", q.Get("span"),
		"span_name", r.URL.Path, "http.route", r.URL.Path}
	// Labels named before span_id and trace_id (a slice of labels is
	// sorted by key) and more than a map's first bucket holds.
	extra, _ := strconv.Atoi(q.Get("labels"))
	for i := 0; i < extra; i++ {
		kv = append(kv, fmt.Sprintf("a%02d", i), fmt.Sprintf("v%d", i))
	}
	labels := pprof.Labels(kv...)
	pprof.Do(r.Context(), labels, func(context.Context) {
		runtime.LockOSThread()
		ns := work()
		runtime.UnlockOSThread()
		w.Header().Set("X-Cpu-Ns", strconv.FormatInt(ns, 10))
		fmt.Fprintln(w, "ok")
	})
}

func cpuHandler(spin func(int64, int64)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
		traced(w, r, func() int64 {
			start := threadCPU()
			spin(int64(ms)*1000000, start)
			return threadCPU() - start
		})
	}
}

func server(addr string) {
	http.HandleFunc("/alpha", cpuHandler(spinAlpha))
	http.HandleFunc("/beta", cpuHandler(spinBeta))
	http.HandleFunc("/io", func(w http.ResponseWriter, r *http.Request) {
		traced(w, r, func() int64 { blockOnPipe(); return 0 })
	})
	fmt.Fprintln(os.Stderr, http.ListenAndServe(addr, nil))
	os.Exit(1)
}

func id(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func get(base, path string, ms, labels int) {
	trace, span := id(16), id(8)
	resp, err := http.Get(fmt.Sprintf("%s%s?trace=%s&span=%s&ms=%d&labels=%d", base, path, trace,
		span, ms, labels))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if labels > 0 {
		path = fmt.Sprintf("%s+%dlabels", path, labels)
	}
	fmt.Printf("%s %s %s %s\n", path, trace, span, resp.Header.Get("X-Cpu-Ns"))
}

func client(base string, n, ms int) {
	for i := 0; i < n; i++ {
		path := "/alpha"
		if i%2 == 1 {
			path = "/beta"
		}
		labels := 0
		if i == 2 {
			labels = 24
		}
		get(base, path, ms, labels)
	}
	get(base, "/io", 0, 0)
	get(base, "/io", 0, 0)
}

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "server" {
		server(os.Args[2])
	}
	if len(os.Args) >= 5 && os.Args[1] == "client" {
		n, _ := strconv.Atoi(os.Args[3])
		ms, _ := strconv.Atoi(os.Args[4])
		client(os.Args[2], n, ms)
		return
	}
	fmt.Fprintln(os.Stderr, "usage: gotrace server ADDR | client URL N MS")
	os.Exit(2)
}
