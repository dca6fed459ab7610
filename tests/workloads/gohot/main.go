// SPDX-License-Identifier: Apache-2.0
//
// gohot - a Go program for the scrape tests (tests/integration/test_scrape*.sh):
// net/http/pprof on -addr, a known hot function (main.hotSpin) burning CPU
// half the time, a little steady allocation (main.allocSome), and
// GET /contend, which runs one burst of mutex contention in
// main.contendBurst and answers when it is over. Only the standard library.
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"runtime"
	"sync"
	"time"
)

var sink uint64
var keep [][]byte

//go:noinline
func hotSpin(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
		x ^= x >> 17
	}
	return x
}

//go:noinline
func allocSome() {
	b := make([]byte, 64<<10)
	b[0] = 1
	keep = append(keep, b)
	if len(keep) > 64 {
		keep = keep[1:]
	}
}

//go:noinline
func contendBurst(workers, rounds int) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				mu.Lock()
				time.Sleep(200 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)

	http.HandleFunc("/contend", func(w http.ResponseWriter, r *http.Request) {
		contendBurst(8, 50)
		fmt.Fprintln(w, "contended")
	})
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("listening on %s\n", ln.Addr().String())
	os.Stdout.Sync()
	// Busy about half the time: the hot function dominates the CPU
	// profile without taking a whole core from the tests around it.
	go func() {
		for {
			start := time.Now()
			for time.Since(start) < 10*time.Millisecond {
				sink += hotSpin(1 << 14)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	go func() {
		for {
			allocSome()
			time.Sleep(10 * time.Millisecond)
		}
	}()
	srv := &http.Server{Handler: http.DefaultServeMux}
	if err := srv.Serve(ln); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
