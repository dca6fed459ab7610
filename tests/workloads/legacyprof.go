// SPDX-License-Identifier: Apache-2.0
//
// legacyprof.go - writes the Go runtime's legacy text profiles (debug=1) of
// a small workload into the folder given as the only argument:
// heap.txt, allocs.txt, goroutine.txt, threadcreate.txt, mutex.txt,
// block.txt. Used by tests/integration/test_pprof_legacy_go.sh, which
// compares profd's reading of them with go tool pprof's.
package main

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var sink [][]byte

func alloc(n int) {
	for i := 0; i < n; i++ {
		sink = append(sink, make([]byte, 1024+i%4096))
	}
}

func contend(mu *sync.Mutex, wg *sync.WaitGroup) {
	defer wg.Done()
	for i := 0; i < 100; i++ {
		mu.Lock()
		time.Sleep(20 * time.Microsecond)
		mu.Unlock()
	}
}

func main() {
	out := os.Args[1]
	runtime.MemProfileRate = 4096
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	alloc(20000)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go contend(&mu, &wg)
	}
	wg.Wait()
	stop := make(chan bool)
	for i := 0; i < 3; i++ {
		go func() { <-stop }()
	}
	runtime.GC()
	for _, name := range []string{"heap", "allocs", "goroutine", "threadcreate", "mutex", "block"} {
		f, err := os.Create(filepath.Join(out, name+".txt"))
		if err != nil {
			panic(err)
		}
		if err := pprof.Lookup(name).WriteTo(f, 1); err != nil {
			panic(err)
		}
		f.Close()
	}
	close(stop)
}
