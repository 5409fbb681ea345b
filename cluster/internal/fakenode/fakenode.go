// Package fakenode is a STAND-IN for scx_tt's node API, kept for the
// plugin's unit tests only: cmd/cluster-test drives real scx_tt processes
// (scx_tt --simulated-node). It speaks the same wire types but not scx_tt's
// slot accounting (no reserved_slots, no latency).
//
// Its admission test is the exact per-CPU check for implicit-deadline tasks
// under EDF on one CPU: a vCPU of utilisation u fits on a CPU when the
// utilisations already admitted on that CPU plus u are at most 1. A task of
// vcpus > 1 needs one reservation per vCPU on distinct CPUs, all or
// nothing. Utilisations are kept in integer millionths so that the sum is
// exact. The latency bound is validated but plays no part here (scx_tt's
// own test uses it).
package fakenode

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"scx-tt/cluster/nodeapi"
)

// Scale: utilisations are held in millionths.
const Scale = 1_000_000

// ToMicro converts a utilisation to millionths (rounded).
func ToMicro(u float64) int64 { return int64(math.Round(u * Scale)) }

type task struct {
	vcpus  int
	util   int64
	cpus   []int
	timing nodeapi.Timing
}

// Server is one stand-in node.
type Server struct {
	Node  string
	CPUs  []int  // the CPU numbers it manages, e.g. 1..8
	Token string // bearer token expected in Authorization
	// Hang makes every authenticated request wait until the client gives up
	// (a node whose API does not answer). Holds records how long each
	// request was held before the client went away.
	Hang bool
	// LateAdmit delays the answer of POST /v1/admit after the admission is
	// applied (a node slower than the client's deadline).
	LateAdmit time.Duration

	mu         sync.Mutex
	generation uint64
	load       map[int]int64 // cpu -> admitted utilisation, millionths
	onCPU      map[int][]string
	tasks      map[string]*task
	events     []nodeapi.Event
	changed    chan struct{} // closed and replaced at each change (watch)
	holds      []time.Duration
	requests   int
}

// New returns a node managing cpus.
func New(node string, cpus []int, token string) *Server {
	s := &Server{Node: node, CPUs: append([]int(nil), cpus...), Token: token,
		load: map[int]int64{}, onCPU: map[int][]string{}, tasks: map[string]*task{},
		changed: make(chan struct{})}
	sort.Ints(s.CPUs)
	return s
}

// Holds returns how long each request to a hanging node was held open.
func (s *Server) Holds() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.holds...)
}

// Requests counts the authenticated requests received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Serve listens on addr (e.g. "127.0.0.1:0") and serves until ctx ends; it
// returns the bound address.
func (s *Server) Serve(ctx context.Context, addr string) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); hs.Close() }()
	go hs.Serve(ln)
	return ln.Addr().String(), nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if !strings.HasPrefix(auth, "Bearer ") || subtle.ConstantTimeCompare([]byte(strings.TrimPrefix(auth, "Bearer ")), []byte(s.Token)) != 1 {
		writeJSON(w, http.StatusUnauthorized, nodeapi.ErrorReply{Message: "missing or wrong bearer token"})
		return
	}
	s.mu.Lock()
	s.requests++
	hang := s.Hang
	s.mu.Unlock()
	if hang {
		start := time.Now()
		// net/http notices that the client went away (and cancels the
		// request's context) only once the body has been read.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
		s.mu.Lock()
		s.holds = append(s.holds, time.Since(start))
		s.mu.Unlock()
		return
	}
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/capacity":
		writeJSON(w, http.StatusOK, s.Capacity())
	case r.Method == http.MethodPost && (r.URL.Path == "/v1/dry-run" || r.URL.Path == "/v1/admit"):
		var req nodeapi.Request
		if err := decode(r, &req); err != nil {
			writeJSON(w, http.StatusBadRequest, nodeapi.ErrorReply{Error: &nodeapi.FieldError{Field: "body", Value: err.Error(), Rule: "a JSON request"}})
			return
		}
		if fe := req.Validate(); fe != nil {
			writeJSON(w, http.StatusBadRequest, nodeapi.ErrorReply{Error: fe})
			return
		}
		if r.URL.Path == "/v1/dry-run" {
			writeJSON(w, http.StatusOK, s.DryRun(&req))
			return
		}
		rep, conflict := s.Admit(&req)
		s.mu.Lock()
		late := s.LateAdmit
		s.mu.Unlock()
		// The admission is applied; the answer comes late (or never
		// reaches a client that gave up).
		time.Sleep(late)
		if conflict {
			writeJSON(w, http.StatusConflict, nodeapi.ErrorReply{Message: fmt.Sprintf("%s is already admitted", req.Name)})
			return
		}
		writeJSON(w, http.StatusOK, rep)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/remove":
		var req nodeapi.RemoveRequest
		if err := decode(r, &req); err != nil {
			writeJSON(w, http.StatusBadRequest, nodeapi.ErrorReply{Error: &nodeapi.FieldError{Field: "body", Value: err.Error(), Rule: "a JSON request"}})
			return
		}
		if req.Name == "" {
			writeJSON(w, http.StatusBadRequest, nodeapi.ErrorReply{Error: &nodeapi.FieldError{Field: "name", Value: "", Rule: "namespace/name"}})
			return
		}
		writeJSON(w, http.StatusOK, s.Remove(req.Name))
	case r.Method == http.MethodGet && r.URL.Path == "/v1/watch":
		s.watch(w, r)
	default:
		writeJSON(w, http.StatusNotFound, nodeapi.ErrorReply{Message: "no such endpoint: " + r.Method + " " + r.URL.Path})
	}
}

func decode(r *http.Request, v any) error {
	d := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 1<<16))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// place finds CPUs for req on the current state (caller holds mu): each vCPU
// on a distinct CPU whose load plus util is at most 1, best fit (the most
// loaded CPU that still fits, lowest number on ties). nil, reason when the
// task does not fit.
func (s *Server) place(req *nodeapi.Request) ([]int, string) {
	u := ToMicro(req.Timing.Util)
	if req.VCPUs > len(s.CPUs) {
		return nil, fmt.Sprintf("%d vCPUs but the node manages %d CPUs", req.VCPUs, len(s.CPUs))
	}
	var fit []int
	for _, c := range s.CPUs {
		if s.load[c]+u <= Scale {
			fit = append(fit, c)
		}
	}
	if len(fit) < req.VCPUs {
		return nil, fmt.Sprintf("%d of %d vCPUs of utilisation %s fit (per-CPU utilisation would exceed 1)",
			len(fit), req.VCPUs, strconv.FormatFloat(req.Timing.Util, 'g', -1, 64))
	}
	sort.SliceStable(fit, func(i, j int) bool { return s.load[fit[i]] > s.load[fit[j]] })
	cpus := append([]int(nil), fit[:req.VCPUs]...)
	sort.Ints(cpus)
	return cpus, ""
}

// DryRun answers whether req would be admitted now; it changes nothing.
func (s *Server) DryRun(req *nodeapi.Request) nodeapi.DryRunReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[req.Name]; ok {
		return nodeapi.DryRunReply{Admit: false, Reason: req.Name + " is already admitted"}
	}
	cpus, reason := s.place(req)
	if cpus == nil {
		return nodeapi.DryRunReply{Admit: false, Reason: reason}
	}
	return nodeapi.DryRunReply{Admit: true, CPUs: cpus}
}

func (s *Server) bump(ev nodeapi.Event) uint64 {
	s.generation++
	ev.Generation = s.generation
	s.events = append(s.events, ev)
	close(s.changed)
	s.changed = make(chan struct{})
	return s.generation
}

// Admit admits req; conflict is true when the name is already admitted.
func (s *Server) Admit(req *nodeapi.Request) (rep nodeapi.AdmitReply, conflict bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tasks[req.Name]; ok {
		return nodeapi.AdmitReply{}, true
	}
	cpus, reason := s.place(req)
	if cpus == nil {
		return nodeapi.AdmitReply{Admitted: false, Reason: reason}, false
	}
	u := ToMicro(req.Timing.Util)
	names := nodeapi.TaskNames(req.Name, req.VCPUs)
	for i, c := range cpus {
		s.load[c] += u
		s.onCPU[c] = append(s.onCPU[c], names[i])
	}
	s.tasks[req.Name] = &task{vcpus: req.VCPUs, util: u, cpus: cpus, timing: req.Timing}
	g := s.bump(nodeapi.Event{Event: "admitted", Name: req.Name, CPUs: cpus})
	return nodeapi.AdmitReply{Admitted: true, CPUs: cpus, Generation: g}, false
}

// Remove removes an admitted task.
func (s *Server) Remove(name string) nodeapi.RemoveReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.tasks[name]
	if !ok {
		return nodeapi.RemoveReply{Removed: false}
	}
	names := nodeapi.TaskNames(name, t.vcpus)
	for i, c := range t.cpus {
		s.load[c] -= t.util
		kept := s.onCPU[c][:0]
		for _, n := range s.onCPU[c] {
			if n != names[i] {
				kept = append(kept, n)
			}
		}
		s.onCPU[c] = kept
	}
	delete(s.tasks, name)
	g := s.bump(nodeapi.Event{Event: "removed", Name: name, CPUs: t.cpus})
	return nodeapi.RemoveReply{Removed: true, Generation: g}
}

// Capacity is the answer of GET /v1/capacity.
func (s *Server) Capacity() nodeapi.Capacity {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := nodeapi.Capacity{API: nodeapi.API, Node: s.Node, Generation: s.generation}
	for _, cpu := range s.CPUs {
		c.CPUs = append(c.CPUs, nodeapi.CPU{CPU: cpu, Utilisation: float64(s.load[cpu]) / Scale,
			Tasks: append([]string{}, s.onCPU[cpu]...)})
	}
	return c
}

// watch streams the events after ?since=G as newline-delimited JSON until
// the client goes away.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	since, err := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
	if err != nil && r.URL.Query().Get("since") != "" {
		writeJSON(w, http.StatusBadRequest, nodeapi.ErrorReply{Error: &nodeapi.FieldError{Field: "since", Value: r.URL.Query().Get("since"), Rule: "an integer >= 0"}})
		return
	}
	fl, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for {
		s.mu.Lock()
		var out []nodeapi.Event
		for _, e := range s.events {
			if e.Generation > since {
				out = append(out, e)
			}
		}
		ch := s.changed
		s.mu.Unlock()
		for _, e := range out {
			if enc.Encode(e) != nil {
				return
			}
			since = e.Generation
		}
		if fl != nil {
			fl.Flush()
		}
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
}
