// Package nodeapi holds the wire types of the scx_tt node API (api
// "scx_tt.node/v1", JSON over HTTP/1.1) and a small client for it.
//
// The kube-scheduler plugin (package plugin) is the client; each node's
// scx_tt serves the API (`scx_tt --simulated-node` in cmd/cluster-test, the
// scx_tt daemon on real nodes; internal/fakenode is a Go stand-in kept for
// the plugin's unit tests). docs/cluster.md describes the endpoints.
package nodeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// API is the value of the "api" field of GET /v1/capacity.
const API = "scx_tt.node/v1"

// Pod annotations read by the plugin.
const (
	AnnotationUtil      = "scx-tt.io/util"
	AnnotationLatencyUS = "scx-tt.io/latency-us"
	AnnotationVCPUs     = "scx-tt.io/vcpus"
	// AnnotationEndpoint is set on a Node: host:port of its scx_tt node API.
	AnnotationEndpoint = "scx-tt.io/endpoint"
)

// UtilRule is scx_tt's rule for timing.util: a share of one CPU per vCPU,
// open at both ends (a whole CPU is not a time-triggered reservation).
const UtilRule = "0 < util < 1"

// Timing is a task's timing: utilisation (0 < util < 1) of each vCPU and
// its latency bound in microseconds.
type Timing struct {
	Util      float64 `json:"util"`
	LatencyUS int64   `json:"latency_us"`
}

// Request is the body of POST /v1/dry-run and POST /v1/admit.
type Request struct {
	Name   string `json:"name"` // namespace/name of the pod
	VCPUs  int    `json:"vcpus"`
	Timing Timing `json:"timing"`
}

// DryRunReply answers POST /v1/dry-run; it changes nothing on the node.
type DryRunReply struct {
	Admit  bool   `json:"admit"`
	CPUs   []int  `json:"cpus,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// AdmitReply answers POST /v1/admit.
type AdmitReply struct {
	Admitted   bool   `json:"admitted"`
	CPUs       []int  `json:"cpus,omitempty"`
	Generation uint64 `json:"generation,omitempty"`
	Reason     string `json:"reason,omitempty"`
}

// RemoveRequest is the body of POST /v1/remove.
type RemoveRequest struct {
	Name string `json:"name"`
}

// RemoveReply answers POST /v1/remove.
type RemoveReply struct {
	Removed    bool   `json:"removed"`
	Generation uint64 `json:"generation,omitempty"`
}

// CPU is one CPU of GET /v1/capacity: its reservation and the tasks on it.
// utilisation = reserved_slots / frame_slots. A task of one vCPU is named
// "namespace/name"; a task of N > 1 vCPUs has one entry per vCPU,
// "namespace/name/vcpu0" .. "namespace/name/vcpu{N-1}", each on a distinct
// CPU (see TaskNames). The plan's own tasks are listed by their plan names.
type CPU struct {
	CPU           int      `json:"cpu"`
	Utilisation   float64  `json:"utilisation"`
	ReservedSlots int64    `json:"reserved_slots"`
	FirmSlots     int64    `json:"firm_slots"`
	SpareSlots    int64    `json:"spare_slots"`
	Tasks         []string `json:"tasks"`
}

// Capacity answers GET /v1/capacity.
type Capacity struct {
	API        string `json:"api"`
	Node       string `json:"node"`
	Generation uint64 `json:"generation"`
	SlotUS     int64  `json:"slot_us,omitempty"`
	FrameSlots int64  `json:"frame_slots,omitempty"`
	CPUs       []CPU  `json:"cpus"`
}

// TaskNames are the names under which a node lists the vCPUs of a request
// named name in GET /v1/capacity: name itself for one vCPU, name/vcpu0 ..
// name/vcpu{N-1} for N > 1.
func TaskNames(name string, vcpus int) []string {
	if vcpus <= 1 {
		return []string{name}
	}
	out := make([]string, vcpus)
	for i := range out {
		out[i] = fmt.Sprintf("%s/vcpu%d", name, i)
	}
	return out
}

// Event is one line of GET /v1/watch?since=G (newline-delimited JSON).
type Event struct {
	Generation uint64 `json:"generation"`
	Event      string `json:"event"` // "admitted" or "removed"
	Name       string `json:"name"`
	CPUs       []int  `json:"cpus,omitempty"`
}

// FieldError is the body of an HTTP 400 answer:
// {"error":{"field":"timing.util","value":"1.5","rule":"0 < util < 1"}}.
type FieldError struct {
	Field string `json:"field"`
	Value string `json:"value"`
	Rule  string `json:"rule"`
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s = %s breaks %s", e.Field, e.Value, e.Rule)
}

// ErrorReply wraps a FieldError (HTTP 400) or a message (other statuses:
// 409 a name already admitted, 410 a watch from a generation the node does
// not have, 422 a refusal by the node's engine for a reason other than the
// timing not fitting).
type ErrorReply struct {
	Error   *FieldError `json:"error,omitempty"`
	Message string      `json:"message,omitempty"`
}

// Validate checks a request as the node API does; nil when valid.
func (r *Request) Validate() *FieldError {
	switch {
	case r.Name == "" || !strings.Contains(r.Name, "/"):
		return &FieldError{Field: "name", Value: r.Name, Rule: "namespace/name"}
	case r.VCPUs < 1:
		return &FieldError{Field: "vcpus", Value: strconv.Itoa(r.VCPUs), Rule: "vcpus >= 1"}
	case !(r.Timing.Util > 0 && r.Timing.Util < 1):
		return &FieldError{Field: "timing.util", Value: strconv.FormatFloat(r.Timing.Util, 'g', -1, 64), Rule: UtilRule}
	case r.Timing.LatencyUS <= 0:
		return &FieldError{Field: "timing.latency_us", Value: strconv.FormatInt(r.Timing.LatencyUS, 10), Rule: "latency_us > 0"}
	}
	return nil
}

// StatusError is an answer of the node API other than 200.
type StatusError struct {
	Status int
	Body   string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("node API answered HTTP %d: %s", e.Status, strings.TrimSpace(e.Body))
}

// Detail is the answer's message or field error, else its body (trimmed,
// at most 300 bytes).
func (e *StatusError) Detail() string {
	var r ErrorReply
	if json.Unmarshal([]byte(e.Body), &r) == nil {
		if r.Error != nil {
			return r.Error.Error()
		}
		if r.Message != "" {
			return r.Message
		}
	}
	b := strings.TrimSpace(e.Body)
	if len(b) > 300 {
		b = b[:300] + "..."
	}
	return b
}

// Client calls one node's API. Every call is bounded by the context's
// deadline; the caller sets it.
type Client struct {
	HTTP     *http.Client
	Endpoint string // host:port
	Token    string
}

// NewHTTPClient returns an HTTP/1.1 client with kept-alive connections and
// the given overall timeout per request (a backstop behind the contexts).
func NewHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     90 * time.Second,
			ForceAttemptHTTP2:   false,
		},
	}
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+c.Endpoint+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return &StatusError{Status: resp.StatusCode, Body: string(b)}
	}
	return json.Unmarshal(b, out)
}

// Capacity calls GET /v1/capacity.
func (c *Client) Capacity(ctx context.Context) (*Capacity, error) {
	var out Capacity
	return &out, c.do(ctx, http.MethodGet, "/v1/capacity", nil, &out)
}

// DryRun calls POST /v1/dry-run.
func (c *Client) DryRun(ctx context.Context, r *Request) (*DryRunReply, error) {
	var out DryRunReply
	return &out, c.do(ctx, http.MethodPost, "/v1/dry-run", r, &out)
}

// Admit calls POST /v1/admit.
func (c *Client) Admit(ctx context.Context, r *Request) (*AdmitReply, error) {
	var out AdmitReply
	return &out, c.do(ctx, http.MethodPost, "/v1/admit", r, &out)
}

// Remove calls POST /v1/remove.
func (c *Client) Remove(ctx context.Context, name string) (*RemoveReply, error) {
	var out RemoveReply
	return &out, c.do(ctx, http.MethodPost, "/v1/remove", &RemoveRequest{Name: name}, &out)
}

// FromAnnotations builds the request for a pod from its annotations.
// ours is false when the pod has no scx-tt.io/util annotation: it is not a
// real-time pod and the plugin leaves it alone. An annotation that does not
// parse, or a timing the node API would refuse, gives a FieldError naming
// the annotation.
func FromAnnotations(name string, ann map[string]string) (req *Request, ours bool, ferr *FieldError) {
	u, ok := ann[AnnotationUtil]
	if !ok {
		return nil, false, nil
	}
	req = &Request{Name: name, VCPUs: 1}
	util, err := strconv.ParseFloat(strings.TrimSpace(u), 64)
	if err != nil || !(util > 0 && util < 1) {
		return nil, true, &FieldError{Field: AnnotationUtil, Value: u, Rule: UtilRule}
	}
	req.Timing.Util = util
	l, ok := ann[AnnotationLatencyUS]
	lat, err := strconv.ParseInt(strings.TrimSpace(l), 10, 64)
	if !ok || err != nil || lat <= 0 {
		return nil, true, &FieldError{Field: AnnotationLatencyUS, Value: l, Rule: "an integer > 0 (microseconds), required with " + AnnotationUtil}
	}
	req.Timing.LatencyUS = lat
	if v, ok := ann[AnnotationVCPUs]; ok {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			return nil, true, &FieldError{Field: AnnotationVCPUs, Value: v, Rule: "an integer >= 1"}
		}
		req.VCPUs = n
	}
	return req, true, nil
}
