// Package plugin is ScxTT, an out-of-tree kube-scheduler plugin that places
// real-time pods and VMs by asking each candidate node's scx_tt.
//
// The admission of a real-time task is an exact schedulability test that
// depends on what the node already holds, so the plugin asks the node (POST
// /v1/dry-run in Filter, /v1/admit in Reserve, /v1/remove in Unreserve)
// rather than reading published counts. A pod without the scx-tt.io/util
// annotation is not a real-time pod: PreFilter returns Skip and the plugin
// takes no part in its placement. A node whose API does not answer within
// the deadline (args.timeoutMs, 200 ms by default) is filtered out with a
// reason and, for args.downCooldownMs after that, is filtered out at once
// without being asked again, so no scheduling cycle waits on it beyond the
// deadline.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"scx-tt/cluster/nodeapi"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "ScxTT"

// Args are the plugin's args in the KubeSchedulerConfiguration's pluginConfig.
type Args struct {
	// TokenFile holds the bearer token sent to every node API (required).
	TokenFile string `json:"tokenFile"`
	// TimeoutMs bounds each call to a node API (default 200).
	TimeoutMs int `json:"timeoutMs"`
	// DownCooldownMs: after a node API failed to answer, it is filtered out
	// without being asked for this long (default 2000; 0 keeps the default,
	// a negative value turns it off).
	DownCooldownMs int `json:"downCooldownMs"`
	// ReserveTimeoutMs bounds Reserve's admit and Unreserve's remove on the
	// one node chosen, which has just answered its dry run (default 5 x
	// timeoutMs). An admit that does not answer in time may still have been
	// applied: Unreserve then removes it.
	ReserveTimeoutMs int `json:"reserveTimeoutMs"`
}

// ScxTT is the plugin.
type ScxTT struct {
	token    string
	timeout  time.Duration
	rtimeout time.Duration // Reserve's admit, Unreserve's remove
	cooldown time.Duration
	http     *http.Client
	handle   fwk.Handle

	nodes corelisters.NodeLister // from the handle's informer factory; nil without a handle

	mu   sync.Mutex
	down map[string]time.Time // endpoint -> filtered out without asking until
}

var (
	_ fwk.PreFilterPlugin   = &ScxTT{}
	_ fwk.FilterPlugin      = &ScxTT{}
	_ fwk.ReservePlugin     = &ScxTT{}
	_ fwk.EnqueueExtensions = &ScxTT{}
)

// New builds the plugin from its args.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args := Args{}
	if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
		return nil, fmt.Errorf("%s args: %w", Name, err)
	}
	if args.TokenFile == "" {
		return nil, fmt.Errorf("%s args: tokenFile is required", Name)
	}
	b, err := os.ReadFile(args.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("%s args: tokenFile: %w", Name, err)
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return nil, fmt.Errorf("%s args: tokenFile %s is empty", Name, args.TokenFile)
	}
	if args.TimeoutMs == 0 {
		args.TimeoutMs = 200
	}
	if args.TimeoutMs < 0 {
		return nil, fmt.Errorf("%s args: timeoutMs must be > 0, got %d", Name, args.TimeoutMs)
	}
	if args.DownCooldownMs == 0 {
		args.DownCooldownMs = 2000
	}
	if args.ReserveTimeoutMs == 0 {
		args.ReserveTimeoutMs = 5 * args.TimeoutMs
	}
	if args.ReserveTimeoutMs < 0 {
		return nil, fmt.Errorf("%s args: reserveTimeoutMs must be > 0, got %d", Name, args.ReserveTimeoutMs)
	}
	timeout := time.Duration(args.TimeoutMs) * time.Millisecond
	p := &ScxTT{
		token:    token,
		timeout:  timeout,
		rtimeout: time.Duration(args.ReserveTimeoutMs) * time.Millisecond,
		cooldown: time.Duration(args.DownCooldownMs) * time.Millisecond,
		// The per-call contexts carry the deadline; the client's own
		// timeout is only a backstop.
		http:   nodeapi.NewHTTPClient(2 * max(timeout, time.Duration(args.ReserveTimeoutMs)*time.Millisecond)),
		handle: h,
		down:   map[string]time.Time{},
	}
	if h != nil && h.SharedInformerFactory() != nil {
		if err := p.watchPods(); err != nil {
			return nil, fmt.Errorf("%s: pod informer: %w", Name, err)
		}
	}
	return p, nil
}

// watchPods registers the handlers that give a pod's admission back to its
// node when the pod is deleted or ends. The scheduler's pod informer leaves
// out pods that ended (its field selector drops phases Succeeded and
// Failed), so a pod that ends usually arrives here as a delete; the update
// handler covers an informer without that selector.
func (p *ScxTT) watchPods() error {
	f := p.handle.SharedInformerFactory()
	p.nodes = f.Core().V1().Nodes().Lister()
	f.Core().V1().Nodes().Informer() // registered with the factory (the scheduler has it already)
	_, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: p.onPodUpdate,
		DeleteFunc: p.onPodDelete,
	})
	return err
}

// onPodUpdate releases a pod whose phase became Succeeded or Failed.
func (p *ScxTT) onPodUpdate(oldObj, newObj any) {
	o, ok1 := oldObj.(*v1.Pod)
	n, ok2 := newObj.(*v1.Pod)
	if ok1 && ok2 && ended(n) && !ended(o) {
		p.release(n, "ended ("+string(n.Status.Phase)+")")
	}
}

// onPodDelete releases a deleted pod (also one known only by its tombstone).
func (p *ScxTT) onPodDelete(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok {
		p.release(pod, "deleted")
	}
}

func ended(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
}

// release calls POST /v1/remove on the node of a bound real-time pod. It
// runs in the plugin's own informer handler (each handler has its own
// goroutine), so a slow node delays only later releases, never a
// scheduling cycle. A call that does not answer is retried twice, a second
// apart; a node that answers (removed or not) is not asked again.
func (p *ScxTT) release(pod *v1.Pod, why string) {
	if pod.Spec.NodeName == "" {
		return
	}
	req, ours, ferr := nodeapi.FromAnnotations(pod.Namespace+"/"+pod.Name, pod.Annotations)
	if !ours || ferr != nil {
		return
	}
	logger := klog.Background().WithValues("pod", req.Name, "node", pod.Spec.NodeName, "why", why)
	node, err := p.nodes.Get(pod.Spec.NodeName)
	if err != nil {
		logger.Error(err, "scx_tt release: node not found; the node keeps the reservation")
		return
	}
	c, st := p.client(node)
	if st != nil {
		logger.Info("scx_tt release: " + st.Message())
		return
	}
	for attempt := 1; ; attempt++ {
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
		r, err := c.Remove(ctx, req.Name)
		cancel()
		var se *nodeapi.StatusError
		if err == nil {
			logger.V(2).Info("scx_tt released", "removed", r.Removed, "generation", r.Generation, "elapsed", time.Since(start))
			return
		}
		if errors.As(err, &se) || attempt == 3 {
			logger.Error(err, "scx_tt release: remove failed; the node keeps the reservation", "attempt", attempt)
			return
		}
		time.Sleep(time.Second)
	}
}

// Name returns the plugin's name.
func (p *ScxTT) Name() string { return Name }

const stateKey fwk.StateKey = Name

type state struct {
	req *nodeapi.Request
	// admittedOn is the node on which Reserve admitted the pod in this
	// cycle; Unreserve removes only that admission.
	admittedOn string
	// uncertain: the admit did not answer in time, so the node may or may
	// not hold the pod (or may admit it a moment later).
	uncertain bool
}

func (s *state) Clone() fwk.StateData { c := *s; return &c }

func getState(cs fwk.CycleState) (*state, error) {
	d, err := cs.Read(stateKey)
	if err != nil {
		return nil, err
	}
	s, ok := d.(*state)
	if !ok {
		return nil, fmt.Errorf("%s: cycle state holds %T", Name, d)
	}
	return s, nil
}

// PreFilter parses the pod's timing annotations; a pod without them is not
// ours and is skipped (Filter and Reserve are then not called for it).
func (p *ScxTT) PreFilter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	req, ours, ferr := nodeapi.FromAnnotations(pod.Namespace+"/"+pod.Name, pod.Annotations)
	if !ours {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if ferr != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "scx_tt: annotation "+ferr.Error())
	}
	cs.Write(stateKey, &state{req: req})
	return nil, nil
}

// PreFilterExtensions: none (the dry run is asked of the node in Filter).
func (p *ScxTT) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

func (p *ScxTT) client(node *v1.Node) (*nodeapi.Client, *fwk.Status) {
	ep := node.Annotations[nodeapi.AnnotationEndpoint]
	if ep == "" {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "scx_tt: node has no "+nodeapi.AnnotationEndpoint+" annotation")
	}
	return &nodeapi.Client{HTTP: p.http, Endpoint: ep, Token: p.token}, nil
}

// isDown tells whether the endpoint failed recently and is still cooling down.
func (p *ScxTT) isDown(ep string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	until, ok := p.down[ep]
	if !ok {
		return false
	}
	if time.Now().After(until) {
		delete(p.down, ep)
		return false
	}
	return true
}

func (p *ScxTT) markDown(ep string) {
	if p.cooldown <= 0 {
		return
	}
	p.mu.Lock()
	p.down[ep] = time.Now().Add(p.cooldown)
	p.mu.Unlock()
}

func (p *ScxTT) markUp(ep string) {
	p.mu.Lock()
	delete(p.down, ep)
	p.mu.Unlock()
}

// callFailed turns a failed call into the status that filters the node out.
func (p *ScxTT) callFailed(ctx context.Context, node, ep, call string, start time.Time, err error) *fwk.Status {
	var se *nodeapi.StatusError
	if errors.As(err, &se) {
		// The node answered, but not with 200: not a timeout. (422: its
		// engine refused for a reason other than the timing not fitting.)
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("scx_tt: node API %s answered HTTP %d: %s", call, se.Status, se.Detail()))
	}
	p.markDown(ep)
	klog.FromContext(ctx).Info("scx_tt node API did not answer", "node", node, "endpoint", ep,
		"call", call, "elapsed", time.Since(start), "deadline", p.timeout, "err", err)
	return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("scx_tt: node API did not answer within %v", p.timeout))
}

// Filter asks the node whether the pod fits (a dry run, changing nothing).
func (p *ScxTT) Filter(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	s, err := getState(cs)
	if err != nil {
		return fwk.AsStatus(err)
	}
	node := ni.Node()
	c, st := p.client(node)
	if st != nil {
		return st
	}
	if p.isDown(c.Endpoint) {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("scx_tt: node API did not answer within %v (cooling down)", p.timeout))
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	r, err := c.DryRun(cctx, s.req)
	if err != nil {
		return p.callFailed(ctx, node.Name, c.Endpoint, "dry-run", start, err)
	}
	p.markUp(c.Endpoint)
	if !r.Admit {
		return fwk.NewStatus(fwk.Unschedulable, "scx_tt: does not fit: "+r.Reason)
	}
	return nil
}

// Reserve admits the pod on the chosen node. A refusal (the node's state
// changed since the dry run) fails the cycle and the pod is retried.
func (p *ScxTT) Reserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	s, err := getState(cs)
	if errors.Is(err, fwk.ErrNotFound) {
		// PreFilter skipped the pod (not a real-time pod); the framework
		// still runs Reserve for it.
		return nil
	}
	if err != nil {
		return fwk.AsStatus(err)
	}
	ni, err := p.nodeInfo(ctx, nodeName)
	if err != nil {
		return fwk.AsStatus(err)
	}
	c, st := p.client(ni)
	if st != nil {
		return st
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, p.rtimeout)
	defer cancel()
	r, err := c.Admit(cctx, s.req)
	if err != nil {
		var se *nodeapi.StatusError
		if !errors.As(err, &se) {
			// No answer: the node may have admitted the pod (or may
			// still); Unreserve, which the framework runs after a failed
			// Reserve, removes it.
			s.admittedOn, s.uncertain = nodeName, true
		}
		return p.callFailed(ctx, nodeName, c.Endpoint, "admit", start, err)
	}
	if !r.Admitted {
		return fwk.NewStatus(fwk.Unschedulable, "scx_tt: admission refused: "+r.Reason)
	}
	s.admittedOn = nodeName
	klog.FromContext(ctx).V(2).Info("scx_tt admitted", "pod", s.req.Name, "node", nodeName, "cpus", r.CPUs, "generation", r.Generation)
	return nil
}

// Unreserve removes the admission made by Reserve in this cycle, if any.
func (p *ScxTT) Unreserve(ctx context.Context, cs fwk.CycleState, pod *v1.Pod, nodeName string) {
	s, err := getState(cs)
	if err != nil || s.admittedOn != nodeName {
		return
	}
	logger := klog.FromContext(ctx)
	ni, err := p.nodeInfo(ctx, nodeName)
	if err != nil {
		logger.Error(err, "scx_tt unreserve: node not found", "pod", s.req.Name, "node", nodeName)
		return
	}
	c, st := p.client(ni)
	if st != nil {
		return
	}
	p.unreserveOn(ctx, s, nodeName, c)
}

// unreserveOn removes s's admission through c.
func (p *ScxTT) unreserveOn(ctx context.Context, s *state, nodeName string, c *nodeapi.Client) {
	logger := klog.FromContext(ctx)
	// After an admit that did not answer, "removed": false may mean that
	// the admit has not been applied yet: ask again a little later, three
	// times in all. The cycle's context may be cancelled already: each
	// removal gets its own.
	attempts := 1
	if s.uncertain {
		attempts = 3
	}
	for i := 1; i <= attempts; i++ {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.rtimeout)
		r, err := c.Remove(cctx, s.req.Name)
		cancel()
		if err == nil && (r.Removed || !s.uncertain) {
			s.admittedOn, s.uncertain = "", false
			return
		}
		if i == attempts {
			if err != nil {
				logger.Error(err, "scx_tt unreserve: remove failed; the node may keep the reservation", "pod", s.req.Name, "node", nodeName, "uncertain", s.uncertain)
			} else {
				logger.Info("scx_tt unreserve: the admit that did not answer was not found on the node", "pod", s.req.Name, "node", nodeName, "attempts", attempts)
			}
			return
		}
		time.Sleep(p.timeout)
	}
}

func (p *ScxTT) nodeInfo(_ context.Context, nodeName string) (*v1.Node, error) {
	ni, err := p.handle.SnapshotSharedLister().NodeInfos().Get(nodeName)
	if err != nil {
		return nil, err
	}
	return ni.Node(), nil
}

// EventsToRegister: a pod refused by every node may fit once a node is added
// or changes, or once an assigned pod is deleted.
func (p *ScxTT) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeAnnotation}},
		{Event: fwk.ClusterEvent{Resource: fwk.AssignedPod, ActionType: fwk.Delete}},
	}, nil
}
