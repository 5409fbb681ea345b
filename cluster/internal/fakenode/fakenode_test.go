package fakenode

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"scx-tt/cluster/nodeapi"
)

func start(t *testing.T) (*Server, *nodeapi.Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := New("n1", []int{1, 2, 3}, "tok")
	addr, err := s.Serve(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return s, &nodeapi.Client{HTTP: nodeapi.NewHTTPClient(2 * time.Second), Endpoint: addr, Token: "tok"}
}

func req(name string, vcpus int, util float64) *nodeapi.Request {
	return &nodeapi.Request{Name: name, VCPUs: vcpus, Timing: nodeapi.Timing{Util: util, LatencyUS: 10000}}
}

func TestExactPerCPUCheck(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	// 0.1 + 0.2 + 0.7 is exactly 1 in millionths (not in float64).
	for i, u := range []float64{0.1, 0.2, 0.7} {
		r, err := c.Admit(ctx, req("default/a"+string(rune('0'+i)), 3, u))
		if err != nil || !r.Admitted || len(r.CPUs) != 3 {
			t.Fatalf("admit %v: %+v %v", u, r, err)
		}
	}
	d, err := c.DryRun(ctx, req("default/b", 1, 0.000001))
	if err != nil || d.Admit {
		t.Fatalf("full node admitted a dry run: %+v %v", d, err)
	}
	if rr, _ := c.Remove(ctx, "default/a2"); !rr.Removed {
		t.Fatal("remove failed")
	}
	// Two CPUs at 0.3: a 3-vCPU task of 0.7 fits, of 0.71 does not (all or nothing).
	if d, _ := c.DryRun(ctx, req("default/b", 3, 0.71)); d.Admit {
		t.Fatalf("0.71 x3 admitted: %+v", d)
	}
	if d, _ := c.DryRun(ctx, req("default/b", 3, 0.7)); !d.Admit || len(d.CPUs) != 3 {
		t.Fatalf("0.7 x3 refused: %+v", d)
	}
	if d, _ := c.DryRun(ctx, req("default/b", 4, 0.1)); d.Admit {
		t.Fatalf("4 vCPUs on 3 CPUs admitted: %+v", d)
	}
	cap, err := c.Capacity(ctx)
	if err != nil || cap.API != nodeapi.API || cap.Generation != 4 || len(cap.CPUs) != 3 || cap.CPUs[0].Utilisation != 0.3 {
		t.Fatalf("capacity: %+v %v", cap, err)
	}
	if rr, _ := c.Remove(ctx, "default/none"); rr.Removed {
		t.Fatal("removed an unknown name")
	}
}

func TestErrors(t *testing.T) {
	_, c := start(t)
	ctx := context.Background()
	bad := *c
	bad.Token = "wrong"
	var se *nodeapi.StatusError
	if _, err := bad.Capacity(ctx); !errors.As(err, &se) || se.Status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := c.DryRun(ctx, req("default/a", 1, 1.5)); !errors.As(err, &se) || se.Status != 400 ||
		!strings.Contains(se.Body, `{"error":{"field":"timing.util","value":"1.5","rule":"0 < util < 1"}}`) {
		t.Fatalf("util 1.5: %v", err)
	}
	if r, err := c.Admit(ctx, req("default/a", 1, 0.5)); err != nil || !r.Admitted {
		t.Fatal(r, err)
	}
	if _, err := c.Admit(ctx, req("default/a", 1, 0.1)); !errors.As(err, &se) || se.Status != http.StatusConflict || !strings.Contains(se.Body, "default/a") {
		t.Fatalf("second admit: %v", err)
	}
}

func TestWatch(t *testing.T) {
	s, c := start(t)
	ctx := context.Background()
	c.Admit(ctx, req("default/a", 1, 0.5))
	hreq, _ := http.NewRequest("GET", "http://"+c.Endpoint+"/v1/watch?since=0", nil)
	hreq.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(hreq)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := func() nodeapi.Event {
		if !sc.Scan() {
			t.Fatal("watch ended")
		}
		var e nodeapi.Event
		json.Unmarshal(sc.Bytes(), &e)
		return e
	}
	if e := next(); e.Generation != 1 || e.Event != "admitted" {
		t.Fatalf("%+v", e)
	}
	s.Remove("default/a")
	if e := next(); e.Generation != 2 || e.Event != "removed" || e.Name != "default/a" {
		t.Fatalf("%+v", e)
	}
}

func TestFromAnnotations(t *testing.T) {
	if _, ours, _ := nodeapi.FromAnnotations("d/p", map[string]string{}); ours {
		t.Fatal("pod without annotations is ours")
	}
	r, ours, fe := nodeapi.FromAnnotations("d/p", map[string]string{nodeapi.AnnotationUtil: "0.25", nodeapi.AnnotationLatencyUS: "10000"})
	if !ours || fe != nil || r.VCPUs != 1 || r.Timing.Util != 0.25 || r.Timing.LatencyUS != 10000 {
		t.Fatal(r, fe)
	}
	if _, _, fe := nodeapi.FromAnnotations("d/p", map[string]string{nodeapi.AnnotationUtil: "1.5", nodeapi.AnnotationLatencyUS: "1"}); fe == nil || fe.Field != nodeapi.AnnotationUtil {
		t.Fatal(fe)
	}
	if _, _, fe := nodeapi.FromAnnotations("d/p", map[string]string{nodeapi.AnnotationUtil: "0.5"}); fe == nil || fe.Field != nodeapi.AnnotationLatencyUS {
		t.Fatal(fe)
	}
}
