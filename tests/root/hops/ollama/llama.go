// SPDX-License-Identifier: GPL-2.0-only

// The Ollama of today in front of llama.cpp's own llama-server (-llama-server
// PATH -model GGUF), after Ollama's llm/llama_server.go (read, not copied):
// the first request starts llama-server as a child on a free loopback port
// with Ollama's flags (--model --port --host 127.0.0.1 --no-webui --offline
// -c CTX*NP -np NP, plus -t), waits until GET /health answers {"status":"ok"}
// (a cold start), and then each request takes one of NP slots (Ollama's
// semaphore), checks GET /health, and POSTs /completion with stream true on a
// new connection (its client disables keep-alives), parsing the SSE "data:"
// lines: content, stop, timings. The server relays each token as Ollama's
// /api/generate NDJSON ({"response":...}) or /api/chat ({"message":...}),
// the last line done with prompt_eval_count and eval_count.
//
// Truth (-log): per request the client's port, the server's read, the slot
// taken, the /completion write (httptrace), the server's first token write,
// and llama-server's own timings (prompt_ms, prompt_n); the cold start's
// spawn and ready times.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

var (
	llamaServer = flag.String("llama-server", "", "serve: run this llama-server (Ollama today)")
	model       = flag.String("model", "", "the GGUF model llama-server loads")
	numParallel = flag.Int("np", 2, "llama-server slots (-np), and the server's semaphore")
	numCtx      = flag.Int("ctx", 2048, "context per slot (-c is ctx * np)")
	numThread   = flag.Int("threads", 1, "llama-server threads (-t)")
	nPredict    = flag.Int("n-predict", 8, "n_predict of each /completion")
)

type llamaStart struct {
	spawnNs, readyNs int64
}

// Start llama-server as Ollama's startLlamaServer does; its base URL.
func (s *server) startLlama() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0") // a free port, as Ollama picks one
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(*llamaServer, "--model", *model, "--port", fmt.Sprint(port),
		"--host", "127.0.0.1", "--no-webui", "--offline",
		"-c", fmt.Sprint(*numCtx**numParallel), "-np", fmt.Sprint(*numParallel),
		"-t", fmt.Sprint(*numThread))
	cmd.Env = append(os.Environ(), "LD_LIBRARY_PATH="+filepath.Dir(*llamaServer))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	s.cold.spawnNs = monoNs()
	if err := cmd.Start(); err != nil {
		return "", err
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); {
		if st, _ := s.health(base); st == "ok" {
			s.cold.readyNs = monoNs()
			return base, nil
		}
		time.Sleep(250 * time.Millisecond) // Ollama's WaitUntilRunning polls so
	}
	return "", fmt.Errorf("llama-server did not become ready")
}

// GET /health: llama-server's status ("ok", "loading model", ...).
func (s *server) health(base string) (string, error) {
	resp, err := s.client.Get(base + "/health")
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var st struct {
		Status string `json:"status"`
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	return st.Status, err
}

type llamaEvent struct {
	Content  string `json:"content"`
	Stop     bool   `json:"stop"`
	StopType string `json:"stop_type"`
	Timings  struct {
		PromptN  int     `json:"prompt_n"`
		PromptMS float64 `json:"prompt_ms"`
		PredictN int     `json:"predicted_n"`
	} `json:"timings"`
}

// One /api/generate or /api/chat request, relayed from llama-server's /completion.
func (s *server) handleLlama(w http.ResponseWriter, r *http.Request, chat bool) {
	var in struct {
		Prompt   string `json:"prompt"`
		Messages []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	tRead := monoNs()
	json.Unmarshal(body, &in)
	prompt := in.Prompt
	for _, m := range in.Messages {
		prompt += m.Content
	}
	base, err := s.runnerURL()
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	tSlot := monoNs()
	if st, err := s.health(base); err != nil || st != "ok" {
		http.Error(w, fmt.Sprint("llama-server status ", st, err), 500)
		return
	}
	// Ollama's fields; ignore_eos added: a random-weights model may end at once
	up, _ := json.Marshal(map[string]interface{}{"prompt": prompt, "stream": true,
		"cache_prompt": true, "n_predict": *nPredict, "temperature": 0.8, "top_k": 40,
		"top_p": 0.9, "min_p": 0.0, "repeat_penalty": 1.1, "repeat_last_n": 64,
		"frequency_penalty": 0.0, "presence_penalty": 0.0, "seed": -1, "ignore_eos": true})
	resp, tUpWrote, err := s.post(r, base+"/completion", up)
	if err != nil {
		http.Error(w, err.Error(), 502)
		return
	}
	defer resp.Body.Close()
	w.Header().Set("Content-Type", "application/x-ndjson")
	tFirst, last := s.relayLlama(w, resp.Body, chat)
	s.logLlama(r, tRead, tSlot, tUpWrote, tFirst, last)
}

// Relay each SSE event as an Ollama NDJSON line; the first token's write time and the last event.
func (s *server) relayLlama(w http.ResponseWriter, body io.Reader, chat bool) (int64, llamaEvent) {
	f := w.(http.Flusher)
	var tFirst int64
	var last llamaEvent
	sc := bufio.NewScanner(body)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		var ev llamaEvent
		if line == "" || json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		out := map[string]interface{}{"model": "m", "created_at": time.Now().UTC(),
			"done": ev.Stop}
		if chat {
			out["message"] = map[string]string{"role": "assistant", "content": ev.Content}
		} else {
			out["response"] = ev.Content
		}
		if ev.Stop {
			last = ev
			out["done_reason"] = map[bool]string{true: "length", false: "stop"}[ev.StopType == "limit"]
			out["prompt_eval_count"] = ev.Timings.PromptN
			out["eval_count"] = ev.Timings.PredictN
		} else if ev.Content == "" {
			continue
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(w, "%s\n", b)
		f.Flush()
		if tFirst == 0 && ev.Content != "" && !ev.Stop {
			tFirst = monoNs()
		}
	}
	return tFirst, last
}

func (s *server) logLlama(r *http.Request, tRead, tSlot, tUpWrote, tFirst int64, ev llamaEvent) {
	if s.logFile == nil {
		return
	}
	s.logMu.Lock()
	defer s.logMu.Unlock()
	_, rport, _ := net.SplitHostPort(r.RemoteAddr)
	fmt.Fprintf(s.logFile, "{\"path\":%q,\"rport\":%s,\"t_read_ns\":%d,\"t_slot_ns\":%d,"+
		"\"t_up_wrote_ns\":%d,\"t_first_ns\":%d,\"prompt_ms\":%f,\"prompt_n\":%d,"+
		"\"predicted_n\":%d,\"spawn_ns\":%d,\"ready_ns\":%d}\n", r.URL.Path, rport, tRead,
		tSlot, tUpWrote, tFirst, ev.Timings.PromptMS, ev.Timings.PromptN, ev.Timings.PredictN,
		s.cold.spawnNs, s.cold.readyNs)
}
