// SPDX-License-Identifier: Apache-2.0
// gomain.go - fixture: Go functions resolved through .gopclntab once
// stripped, including a two-level inline chain (square inlined into
// mix, mix inlined into hotLoop) that only the inline tree in go:func.*
// can expand.
package main

import (
	"fmt"
	"os"
)

func square(x int) int { return x * x % 7 }

func mix(x int) int { return square(x) + square(x+1) }

//go:noinline
func hotLoop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += mix(i)
	}
	return s
}

func main() {
	fmt.Println(hotLoop(len(os.Args) * 1000))
}
