// SPDX-License-Identifier: Apache-2.0
// A workload for test_producer_pyroscope_sdk.sh: the real Pyroscope Go
// SDK (github.com/grafana/pyroscope-go) profiles it and pushes to the
// server given as the first argument, unchanged.
//
// One goroutine, locked to its OS thread, alternates hotWork and
// coldWork (three times as many loop iterations in hot) until the two
// have used CPU_SECONDS of thread CPU time (CLOCK_THREAD_CPUTIME_ID, the
// scheduler's exact count, so a loaded machine stretches the run, not
// the figures; at most 8 times that in wall time), measuring each call's
// thread CPU and wall time. The last line of output is JSON with that
// measured split, which the test compares with the profile's. Part of
// the hot work runs under pyroscope.TagWrapper with phase=burst, a
// dynamic tag the SDK sends as a pprof sample label.
//
// Usage: pyroscope_go URL APP CPU_SECONDS
package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"github.com/grafana/pyroscope-go"
)

var sink uint64

//go:noinline
func hotWork(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	sink = x
}

//go:noinline
func coldWork(n int) {
	x := sink
	for i := 0; i < n; i++ {
		x = x*2862933555777941757 + 3037000493
	}
	sink = x
}

func threadCPU() time.Duration {
	var ts syscall.Timespec
	const clockThreadCPUTimeID = 3
	_, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID,
		uintptr(unsafe.Pointer(&ts)), 0)
	if e != 0 {
		panic(e)
	}
	return time.Duration(ts.Nano())
}

func main() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: pyroscope_go URL APP CPU_SECONDS")
		os.Exit(2)
	}
	secs, err := strconv.Atoi(os.Args[3])
	if err != nil {
		panic(err)
	}
	p, err := pyroscope.Start(pyroscope.Config{
		ApplicationName: os.Args[2],
		ServerAddress:   os.Args[1],
		Tags:            map[string]string{"env": "ci", "region": "eu"},
		ProfileTypes:    []pyroscope.ProfileType{pyroscope.ProfileCPU, pyroscope.ProfileInuseSpace},
		UploadRate:      time.Second,
	})
	if err != nil {
		panic(err)
	}
	runtime.LockOSThread()
	var hot, cold, hotWall, coldWall time.Duration
	want := time.Duration(secs) * time.Second
	end := time.Now().Add(8 * want)
	for i := 0; hot+cold < want && time.Now().Before(end); i++ {
		w0 := time.Now()
		t0 := threadCPU()
		if i%4 == 0 {
			pyroscope.TagWrapper(context.Background(), pyroscope.Labels("phase", "burst"),
				func(context.Context) { hotWork(3000000) })
		} else {
			hotWork(3000000)
		}
		t1 := threadCPU()
		w1 := time.Now()
		coldWork(1000000)
		t2 := threadCPU()
		hot += t1 - t0
		cold += t2 - t1
		hotWall += w1.Sub(w0)
		coldWall += time.Since(w1)
	}
	runtime.UnlockOSThread()
	p.Stop()
	fmt.Printf("{\"done\":true,\"hot_ns\":%d,\"cold_ns\":%d,\"hot_wall_ns\":%d,\"cold_wall_ns\":%d}\n",
		hot.Nanoseconds(), cold.Nanoseconds(), hotWall.Nanoseconds(), coldWall.Nanoseconds())
}
