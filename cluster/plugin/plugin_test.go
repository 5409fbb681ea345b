package plugin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"scx-tt/cluster/internal/fakenode"
	"scx-tt/cluster/nodeapi"
)

func newPlugin(t *testing.T, args string) *ScxTT {
	t.Helper()
	tf := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tf, []byte("tok\n"), 0o600)
	p, err := New(context.Background(), &runtime.Unknown{Raw: []byte(`{"tokenFile":"` + tf + `"` + args + `}`)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p.(*ScxTT)
}

func nodeInfo(name, ep string) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{nodeapi.AnnotationEndpoint: ep}}})
	return ni
}

func pod(ann map[string]string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", Annotations: ann}}
}

var rt = map[string]string{nodeapi.AnnotationUtil: "0.5", nodeapi.AnnotationLatencyUS: "1000", nodeapi.AnnotationVCPUs: "2"}

func TestPreFilterSkipsPlainPods(t *testing.T) {
	p := newPlugin(t, "")
	if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), pod(nil), nil); st.Code() != fwk.Skip {
		t.Fatalf("plain pod: %v", st)
	}
	bad := map[string]string{nodeapi.AnnotationUtil: "2", nodeapi.AnnotationLatencyUS: "1000"}
	if _, st := p.PreFilter(context.Background(), framework.NewCycleState(), pod(bad), nil); st.Code() != fwk.UnschedulableAndUnresolvable ||
		!strings.Contains(st.Message(), nodeapi.AnnotationUtil) {
		t.Fatalf("bad pod: %v", st)
	}
	// Reserve on a skipped pod does nothing.
	if st := p.Reserve(context.Background(), framework.NewCycleState(), pod(nil), "n1"); !st.IsSuccess() {
		t.Fatalf("reserve of a skipped pod: %v", st)
	}
}

func TestFilterAsksTheNode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := fakenode.New("n1", []int{1, 2}, "tok")
	ep, _ := s.Serve(ctx, "127.0.0.1:0")
	p := newPlugin(t, "")
	cs := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, cs, pod(rt), nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st := p.Filter(ctx, cs, pod(rt), nodeInfo("n1", ep)); !st.IsSuccess() {
		t.Fatalf("empty node: %v", st)
	}
	s.Admit(&nodeapi.Request{Name: "default/other", VCPUs: 1, Timing: nodeapi.Timing{Util: 0.6, LatencyUS: 1000}})
	if st := p.Filter(ctx, cs, pod(rt), nodeInfo("n1", ep)); st.Code() != fwk.Unschedulable || !strings.Contains(st.Message(), "does not fit") {
		t.Fatalf("full node: %v", st)
	}
}

func TestFilterDoesNotWaitOnAHangingNode(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := fakenode.New("n1", []int{1, 2}, "tok")
	s.Hang = true
	ep, _ := s.Serve(ctx, "127.0.0.1:0")
	p := newPlugin(t, `,"timeoutMs":100,"downCooldownMs":300`)
	cs := framework.NewCycleState()
	p.PreFilter(ctx, cs, pod(rt), nil)
	start := time.Now()
	st := p.Filter(ctx, cs, pod(rt), nodeInfo("n1", ep))
	if d := time.Since(start); st.Code() != fwk.Unschedulable || d > 200*time.Millisecond || d < 100*time.Millisecond {
		t.Fatalf("first call: %v after %v", st, d)
	}
	// Cooling down: filtered out at once, without a request.
	start = time.Now()
	st = p.Filter(ctx, cs, pod(rt), nodeInfo("n1", ep))
	if d := time.Since(start); st.Code() != fwk.Unschedulable || d > 20*time.Millisecond || s.Requests() != 1 {
		t.Fatalf("cooling down: %v after %v, %d requests", st, d, s.Requests())
	}
	time.Sleep(350 * time.Millisecond)
	p.Filter(ctx, cs, pod(rt), nodeInfo("n1", ep))
	if s.Requests() != 2 {
		t.Fatalf("after the cool-down the node is asked again: %d requests", s.Requests())
	}
}

func TestReleaseOnDeleteAndEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := fakenode.New("n1", []int{1, 2}, "tok")
	ep, _ := s.Serve(ctx, "127.0.0.1:0")
	p := newPlugin(t, "")
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	idx.Add(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{nodeapi.AnnotationEndpoint: ep}}})
	p.nodes = corelisters.NewNodeLister(idx)
	held := func() int {
		n := 0
		for _, c := range s.Capacity().CPUs {
			n += len(c.Tasks)
		}
		return n
	}
	bound := pod(rt)
	bound.Spec.NodeName = "n1"
	admit := func() {
		if r, _ := s.Admit(&nodeapi.Request{Name: "default/p", VCPUs: 2, Timing: nodeapi.Timing{Util: 0.5, LatencyUS: 1000}}); !r.Admitted {
			t.Fatal("admit")
		}
	}

	// A deleted bound pod is removed from its node.
	admit()
	p.onPodDelete(bound)
	if held() != 0 {
		t.Fatalf("after delete: %v", s.Capacity())
	}
	// Also when the informer only has its tombstone.
	admit()
	p.onPodDelete(cache.DeletedFinalStateUnknown{Key: "default/p", Obj: bound})
	if held() != 0 {
		t.Fatalf("after delete (tombstone): %v", s.Capacity())
	}
	// A pod that ends is removed; a running one is not.
	admit()
	running := bound.DeepCopy()
	running.Status.Phase = v1.PodRunning
	p.onPodUpdate(bound, running)
	if held() != 2 {
		t.Fatalf("running pod released: %v", s.Capacity())
	}
	done := running.DeepCopy()
	done.Status.Phase = v1.PodSucceeded
	p.onPodUpdate(running, done)
	if held() != 0 {
		t.Fatalf("after Succeeded: %v", s.Capacity())
	}
	// Plain pods and pods not bound are left alone.
	admit()
	plain := bound.DeepCopy()
	plain.Annotations = nil
	p.onPodDelete(plain)
	unbound := pod(rt)
	p.onPodDelete(unbound)
	if held() != 2 {
		t.Fatalf("plain or unbound pod released: %v", s.Capacity())
	}
}

func TestUnreserveRemovesAnAdmitThatAnsweredLate(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := fakenode.New("n1", []int{1, 2}, "tok")
	s.LateAdmit = 300 * time.Millisecond
	ep, _ := s.Serve(ctx, "127.0.0.1:0")
	p := newPlugin(t, `,"timeoutMs":50,"reserveTimeoutMs":100`)
	cs := framework.NewCycleState()
	if _, st := p.PreFilter(ctx, cs, pod(rt), nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	c := &nodeapi.Client{HTTP: p.http, Endpoint: ep, Token: "tok"}
	// Reserve through the client directly (no snapshot lister in a unit
	// test): the admit is applied but its answer comes after the deadline.
	st, _ := getState(cs)
	cctx, cc := context.WithTimeout(ctx, p.rtimeout)
	_, err := c.Admit(cctx, st.req)
	cc()
	if err == nil {
		t.Fatal("admit answered within the deadline")
	}
	st.admittedOn, st.uncertain = "n1", true
	p.unreserveOn(ctx, st, "n1", c)
	if n := len(s.Capacity().CPUs[0].Tasks) + len(s.Capacity().CPUs[1].Tasks); n != 0 {
		t.Fatalf("after Unreserve the node still holds %d tasks: %+v", n, s.Capacity())
	}
}
