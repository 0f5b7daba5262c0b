// SPDX-License-Identifier: GPL-2.0-only

// An Ollama-shaped stack for tests/root/hops (case 29), written for these tests.
// With -llama-server, the Ollama of today: llama.cpp's llama-server as the
// model runner (llama.go). Without, an older Ollama's layout (its
// llm/server.go before the llama-server runner): `serve` answers
// /api/chat (NDJSON, message.content) and /v1/chat/completions (SSE). Its
// first request starts a runner child (`runner`), which loads a "model"
// for -load-ms before it listens: a cold start. Requests then take the one
// slot (a semaphore, as Ollama's sem) and are posted to the runner's
// /completion over loopback HTTP; the runner waits -prefill-ms, then writes
// -tokens NDJSON lines -itl-ms apart ({"content":...}, the last "done":true
// with eval_count). The server relays each line as it comes.
//
// Truth: with -log FILE, one JSON object per request, CLOCK_MONOTONIC ns
// (the clock of bpf_ktime_get_ns): the client's port (rport), the server's
// read, the clock just before its upstream request and when net/http said it
// was written (httptrace WroteRequest), the runner's read and first write, the
// server's first write.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"
)

func monoNs() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 1, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Sec*1e9 + ts.Nsec
}

var (
	port      = flag.Int("port", 0, "listen port (0: any; printed)")
	loadMs    = flag.Int("load-ms", 300, "runner: model load before it listens")
	prefillMs = flag.Int("prefill-ms", 40, "runner: time to the first token")
	itlMs     = flag.Int("itl-ms", 10, "runner: time between tokens")
	tokens    = flag.Int("tokens", 6, "runner: tokens per request")
	logPath   = flag.String("log", "", "serve: truth log (NDJSON)")
)

func listen() net.Listener {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", *port))
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
	return l
}

// ---- the runner ----

func runner() {
	time.Sleep(time.Duration(*loadMs) * time.Millisecond) // loading the model
	l := listen()
	fmt.Printf("runner listening on %s\n", l.Addr())
	http.HandleFunc("/completion", func(w http.ResponseWriter, r *http.Request) {
		tHandler := monoNs() // net/http read the headers just before
		io.Copy(io.Discard, r.Body)
		tRead := monoNs()
		w.Header().Set("Content-Type", "application/x-ndjson")
		f := w.(http.Flusher)
		time.Sleep(time.Duration(*prefillMs) * time.Millisecond)
		// the first token's write lies between these two stamps
		var tFirstPre, tFirst int64
		for i := 0; i < *tokens; i++ {
			if i == 0 {
				tFirstPre = monoNs()
			}
			fmt.Fprintf(w, "{\"content\":\"t%d \",\"done\":false}\n", i)
			f.Flush()
			if i == 0 {
				tFirst = monoNs()
			} else {
				time.Sleep(time.Duration(*itlMs) * time.Millisecond)
			}
		}
		fmt.Fprintf(w, "{\"content\":\"\",\"done\":true,\"eval_count\":%d,\"t_read_ns\":%d,"+
			"\"t_handler_ns\":%d,\"t_first_pre_ns\":%d,\"t_first_ns\":%d}\n", *tokens,
			tRead, tHandler, tFirstPre, tFirst)
		f.Flush()
	})
	http.Serve(l, nil)
}

// ---- the server ----

type server struct {
	mu      sync.Mutex
	runner  string // base URL, "" until started
	sem     chan struct{}
	logMu   sync.Mutex
	logFile *os.File
	client  *http.Client
	cold    llamaStart // -llama-server: its spawn and first healthy answer
}

// The runner, started on first use: a child on a loopback port of its own.
func (s *server) runnerURL() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runner != "" {
		return s.runner, nil
	}
	if *llamaServer != "" {
		base, err := s.startLlama()
		s.runner = base
		return base, err
	}
	cmd := exec.Command(os.Args[0], "-port", "0", "-load-ms", fmt.Sprint(*loadMs),
		"-prefill-ms", fmt.Sprint(*prefillMs), "-itl-ms", fmt.Sprint(*itlMs),
		"-tokens", fmt.Sprint(*tokens), "runner")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	cmd.Stderr = os.Stderr
	// the runner ends with the server, even when the server is killed
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "runner listening on ") {
		return "", fmt.Errorf("runner did not start: %q %v", line, err)
	}
	s.runner = "http://" + strings.TrimSpace(strings.TrimPrefix(line, "runner listening on "))
	return s.runner, nil
}

// POST body to url for client request r; the response and when net/http said the
// request was written (httptrace WroteRequest).
func (s *server) post(r *http.Request, url string, body []byte) (*http.Response, int64, error) {
	var wrote int64
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		wrote = monoNs()
	}}
	req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(r.Context(), trace),
		"POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	return resp, wrote, err
}

func (s *server) handle(w http.ResponseWriter, r *http.Request, sse bool) {
	body, _ := io.ReadAll(r.Body)
	tRead := monoNs()
	base, err := s.runnerURL()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	s.sem <- struct{}{} // the one slot
	defer func() { <-s.sem }()
	// the upstream request's write lies between these two (net/http/httptrace)
	tUpPre := monoNs()
	resp, tUpWrote, err := s.post(r, base+"/completion", body)
	if err != nil {
		http.Error(w, err.Error(), 502)
		return
	}
	defer resp.Body.Close()
	if sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/x-ndjson")
	}
	f := w.(http.Flusher)
	var tFirst int64
	var last map[string]interface{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]interface{}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		content, _ := m["content"].(string)
		done, _ := m["done"].(bool)
		if done {
			last = m
		}
		if content == "" && !done {
			continue // Ollama filters empty lines before the client
		}
		if sse {
			if done {
				fmt.Fprint(w, "data: [DONE]\n\n")
			} else {
				b, _ := json.Marshal(map[string]interface{}{"object": "chat.completion.chunk",
					"choices": []interface{}{map[string]interface{}{"index": 0,
						"delta": map[string]string{"content": content}}}})
				fmt.Fprintf(w, "data: %s\n\n", b)
			}
		} else {
			b, _ := json.Marshal(map[string]interface{}{"model": "m",
				"message": map[string]string{"role": "assistant", "content": content},
				"done": done, "eval_count": m["eval_count"]})
			fmt.Fprintf(w, "%s\n", b)
		}
		f.Flush()
		if tFirst == 0 && content != "" {
			tFirst = monoNs()
		}
	}
	if s.logFile != nil && last != nil {
		s.logMu.Lock()
		_, rport, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(s.logFile, "{\"path\":%q,\"rport\":%s,\"t_read_ns\":%d,"+
			"\"t_up_pre_ns\":%d,\"t_up_wrote_ns\":%d,\"runner_read_ns\":%.0f,"+
			"\"runner_handler_ns\":%.0f,\"runner_first_pre_ns\":%.0f,\"runner_first_ns\":%.0f,"+
			"\"t_first_ns\":%d}\n", r.URL.Path, rport, tRead, tUpPre, tUpWrote,
			last["t_read_ns"], last["t_handler_ns"], last["t_first_pre_ns"], last["t_first_ns"],
			tFirst)
		s.logMu.Unlock()
	}
}

func serve() {
	s := &server{sem: make(chan struct{}, 1), client: &http.Client{}}
	if *llamaServer != "" {
		// Ollama's client to llama-server: no keep-alive, a connection per call
		s.sem = make(chan struct{}, *numParallel)
		s.client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	}
	if *logPath != "" {
		f, err := os.Create(*logPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			os.Exit(1)
		}
		s.logFile = f
	}
	l := listen()
	fmt.Printf("listening on %s\n", l.Addr())
	mux := http.NewServeMux()
	mux.HandleFunc("/api/chat", func(w http.ResponseWriter, r *http.Request) {
		if *llamaServer != "" {
			s.handleLlama(w, r, true)
		} else {
			s.handle(w, r, false)
		}
	})
	mux.HandleFunc("/api/generate", func(w http.ResponseWriter, r *http.Request) {
		s.handleLlama(w, r, false)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		s.handle(w, r, true)
	})
	http.Serve(l, mux)
}

func main() {
	flag.Parse()
	switch flag.Arg(0) {
	case "runner":
		runner()
	case "serve", "":
		serve()
	default:
		fmt.Fprintln(os.Stderr, "Error: usage: ollamashaped [flags] serve|runner")
		os.Exit(2)
	}
}
