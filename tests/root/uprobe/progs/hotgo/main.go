// SPDX-License-Identifier: GPL-2.0-only
// docs/cases.md #4 target: main.hot sleeps and recurses with a 2 KiB frame, so the
// goroutine stack grows (and is copied) under active calls. Prints, for every
// call, innermost first, its duration as measured inside hot and as its caller
// measured it around the call: a uprobe's entry and return lie between the two.

package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"
)

var durs, outer []int64

// call is hot(depth, sleep) timed by its caller.
func call(depth int, sleep time.Duration) int {
	t := time.Now()
	r := hot(depth, sleep)
	outer = append(outer, time.Since(t).Nanoseconds())
	return r
}

// hot sleeps, then recurses with a large frame so the goroutine stack grows
// (and is copied) while outer calls are still active.
//
//go:noinline
func hot(depth int, sleep time.Duration) int {
	t0 := time.Now()
	var pad [2048]byte
	pad[depth%len(pad)] = byte(depth)
	time.Sleep(sleep)
	r := int(pad[depth%len(pad)])
	if depth > 0 {
		r += call(depth-1, sleep)
	}
	durs = append(durs, time.Since(t0).Nanoseconds())
	return r
}

func main() {
	runtime.LockOSThread()
	n, _ := strconv.Atoi(os.Args[1])
	depth, _ := strconv.Atoi(os.Args[2])
	bufio.NewReader(os.Stdin).ReadByte()
	done := make(chan int)
	go func() {
		// Pin the goroutine: the tracer pairs entry and return by thread id,
		// and a goroutine may resume on another thread after sleeping.
		runtime.LockOSThread()
		s := 0
		for i := 0; i < n; i++ {
			s += call(depth, 2*time.Millisecond)
		}
		done <- s
	}()
	<-done
	for i, d := range durs {
		fmt.Println(d, outer[i])
	}
}
