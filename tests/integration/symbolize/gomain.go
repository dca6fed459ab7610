// SPDX-License-Identifier: Apache-2.0
// gomain.go - fixture: a Go function resolved through .gopclntab once stripped.
package main

import (
	"fmt"
	"os"
)

//go:noinline
func hotLoop(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += i * i % 7
	}
	return s
}

func main() {
	fmt.Println(hotLoop(len(os.Args) * 1000))
}
