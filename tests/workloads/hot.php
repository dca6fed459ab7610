<?php
// SPDX-License-Identifier: Apache-2.0
// hot.php - a PHP workload with a known CPU split for the agent's
// interpreter-frame tests: work_a, Outer::run and a closure called
// through array_map share the CPU 5:3:2 by construction (each calls
// spin, a plain PHP loop); each round's CPU time is measured by the
// program itself (getrusage user + system, the process is
// single-threaded) and the totals printed at the end as "NAME SHARE",
// so the test compares the agent's shares with the program's own.
// Usage: php8.2 hot.php SECONDS

function spin($n)
{
    $x = 0;
    for ($i = 0; $i < $n; $i++) {
        $x += $i * $i;
    }
    return $x;
}

function work_a($n)
{
    return spin($n);
}

class Outer
{
    public function run($n)
    {
        return spin($n);
    }
}

function cpu()
{
    $r = getrusage();
    return $r["ru_utime.tv_sec"] + $r["ru_utime.tv_usec"] / 1e6 +
        $r["ru_stime.tv_sec"] + $r["ru_stime.tv_usec"] / 1e6;
}

$secs = (float)($argv[1] ?? 10);
$spent = ["work_a" => 0.0, "Outer::run" => 0.0, "{closure}" => 0.0];
$o = new Outer();
$closure = function ($n) {
    return spin($n);
};
$end = cpu() + $secs;
while (cpu() < $end) {
    $t = cpu();
    work_a(250000);
    $spent["work_a"] += cpu() - $t;
    $t = cpu();
    $o->run(150000);
    $spent["Outer::run"] += cpu() - $t;
    $t = cpu();
    array_map($closure, [100000]);
    $spent["{closure}"] += cpu() - $t;
}
$total = array_sum($spent);
foreach ($spent as $k => $v) {
    printf("%s %.4f\n", $k, $total > 0 ? $v / $total : 0);
}
