// SPDX-License-Identifier: GPL-2.0-only
// gotls: a net/http TLS server (crypto/tls) that streams SSE, the Go
// fixture of tests/root/tls. Per POST: the response head at once, the first token
// event (content "FIRST") -ttft-ms after the handler began, then one more
// every -itl-ms, each flushed in its own write. -log FILE gets one JSON line
// per request with CLOCK_MONOTONIC ns (the clock of bpf_ktime_get_ns):
// t_read_ns (the handler had read the whole body), t_first_ns and
// t_token_ns (each flush returned), t_token_pre_ns (each event's write
// began), t_end_ns, rport.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

// CLOCK_MONOTONIC ns: Go's time.Now has no public monotonic reading.
func mono() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Sec*1e9 + ts.Nsec
}

func sleepUntil(t int64) {
	for {
		left := t - mono()
		if left <= 0 {
			return
		}
		if left > 2e6 {
			time.Sleep(time.Duration(left - 1e6))
		}
	}
}

func main() {
	cert := flag.String("cert", "", "certificate PEM")
	key := flag.String("key", "", "key PEM")
	ttft := flag.Int("ttft-ms", 100, "first token after the read")
	itl := flag.Int("itl-ms", 20, "then one token every")
	tokens := flag.Int("tokens", 8, "tokens per response")
	logPath := flag.String("log", "", "truth log")
	flag.Parse()
	logf, err := os.OpenFile(*logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0644)
	if err != nil {
		panic(err)
	}
	var mu sync.Mutex
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		tRead := mono()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		f := w.(http.Flusher)
		f.Flush()
		ts, pre := []int64{}, []int64{}
		for i := 0; i < *tokens; i++ {
			sleepUntil(tRead + int64(*ttft+i**itl)*1e6)
			text := "FIRST"
			if i > 0 {
				text = "t" + strconv.Itoa(i)
			}
			pre = append(pre, mono())
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"%s\"}}]}\n\n", text)
			f.Flush()
			ts = append(ts, mono())
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
		f.Flush()
		tEnd := mono()
		_, port, _ := net.SplitHostPort(r.RemoteAddr)
		rport, _ := strconv.Atoi(port)
		line, _ := json.Marshal(map[string]interface{}{"rport": rport, "t_read_ns": tRead,
			"t_first_ns": ts[0], "t_token_ns": ts, "t_token_pre_ns": pre, "t_end_ns": tEnd, "tokens": *tokens})
		mu.Lock()
		logf.Write(append(line, '\n'))
		mu.Unlock()
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	os.Stdout.Sync()
	panic(http.ServeTLS(ln, nil, *cert, *key))
}
