// Command cluster-test runs ScxTT against a real control plane and real
// scx_tt nodes: etcd (embedded), kube-apiserver and the scx-tt-scheduler
// (the upstream kube-scheduler with the plugin), all on 127.0.0.1, and one
// `scx_tt --simulated-node` process per node serving the node API (-scx-tt
// names the binary). It creates one Node object per node, submits pods with
// random timings, waits until each is bound or Pending with a
// FailedScheduling event, and checks:
//
//   - every pod is bound or refused with an event; pods without timing
//     annotations are all bound (the plugin skips them); a bad annotation is
//     refused naming it;
//   - no over-admission: each node's state (GET /v1/capacity) equals the
//     plan's own reservation plus an independent recomputation, from the
//     bound pods' annotations, of the slots each vCPU reserves (recompute.go),
//     CPU by CPU; no CPU holds more than the frame; the node holds exactly the
//     pods bound to it, each vCPU on a distinct CPU, so that every pod is bound
//     to a node that admitted it;
//   - no refused pod fits an answering node at the end of the burst;
//   - deleting bound pods frees exactly their slots (the plugin's informer
//     calls /v1/remove), and copies of the deleted pods are then placed;
//   - a node's scx_tt killed (SIGKILL) and restarted with --resume on the
//     same run dir holds the same admissions, CPU by CPU;
//   - a node whose scx_tt is stopped (SIGSTOP: TCP connects, nothing answers)
//     is filtered out, binds nothing, and the scheduler never waited on it
//     beyond the deadline plus a margin (the plugin logs each call that did
//     not answer, with its elapsed time);
//   - every scx_tt ends cleanly on SIGTERM.
//
// It prints the counts, placement times (p50/p99), PASS/FAIL per check and
// "N passed, N failed"; its exit status is non-zero when a check fails.
// Every scx_tt it started is killed when it returns, on failure and on
// SIGINT/SIGTERM too (and dies with it if it is killed: Pdeathsig).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"scx-tt/cluster/internal/controlplane"
	"scx-tt/cluster/nodeapi"
)

var (
	binDir     = flag.String("bin", "bin", "directory holding kube-apiserver and scx-tt-scheduler")
	scxBin     = flag.String("scx-tt", "", "the scx_tt binary (required): each node is `scx_tt --simulated-node` serving the node API")
	baseTask   = flag.Bool("base-task", true, "give each node's plan one task (base: CPU 1, period 12, wcet 1, 10 slots per frame); scx_tt refuses a plan with no task (\"tasks = []: must not be empty\")")
	nNodes     = flag.Int("nodes", 5, "answering nodes")
	nCPUs      = flag.Int("cpus", 8, "CPUs managed per node (numbered 1..cpus)")
	nPods      = flag.Int("pods", 200, "pods to submit")
	plainFrac  = flag.Float64("plain", 0.05, "fraction of pods without timing annotations")
	hang       = flag.Bool("hang-node", true, "add one node whose scx_tt is stopped (SIGSTOP) once ready")
	deleteFrac = flag.Float64("delete", 0.1, "fraction of the bound real-time pods deleted (at least 1; 0: no delete check)")
	restart    = flag.Bool("restart", true, "kill one node's scx_tt (SIGKILL) and restart it with --resume")
	timeoutMs  = flag.Int("timeout-ms", 200, "the plugin's deadline per node API call")
	workers    = flag.Int("workers", 4, "concurrent pod creations")
	rate       = flag.Float64("rate", 0, "pods submitted per second (0: as fast as the workers go)")
	cooldownMs = flag.Int("cooldown-ms", 0, "the plugin's downCooldownMs (0: its default, 2000; negative: off, every cycle asks the hanging node)")
	seed       = flag.Int64("seed", 1, "random seed of the pod timings")
	limit      = flag.Duration("limit", 10*time.Minute, "give up after this long")
	keep       = flag.Bool("keep", false, "keep the work directory")
	workdir    = flag.String("workdir", "", "work directory (default: a new temporary one)")
	jsonOut    = flag.String("json", "", "also write the results as JSON to this file")
	holdMargin = flag.Duration("hold-margin", 150*time.Millisecond, "how far past the deadline the scheduler may wait on the hanging node")
)

type result struct {
	checks   []string
	failures []string
}

func (r *result) check(ok bool, name string, detail string, args ...any) {
	d := fmt.Sprintf(detail, args...)
	if ok {
		r.checks = append(r.checks, name)
		fmt.Printf("PASS %s: %s\n", name, d)
	} else {
		r.failures = append(r.failures, name)
		fmt.Printf("FAIL %s: %s\n", name, d)
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.5) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func main() {
	flag.Parse()
	os.Exit(run())
}

// podInfo is what the test knows of a real-time pod from its annotations.
type podInfo struct {
	req      *nodeapi.Request
	perFrame int64 // slots per frame each vCPU reserves (recompute.go)
}

// nodeState is one node's GET /v1/capacity, indexed.
type nodeState struct {
	capy     *nodeapi.Capacity
	reserved map[int]int64           // cpu -> reserved_slots
	tasks    map[int]map[string]bool // cpu -> task names
}

func index(c *nodeapi.Capacity) *nodeState {
	st := &nodeState{capy: c, reserved: map[int]int64{}, tasks: map[int]map[string]bool{}}
	for _, cpu := range c.CPUs {
		st.reserved[cpu.CPU] = cpu.ReservedSlots
		st.tasks[cpu.CPU] = map[string]bool{}
		for _, t := range cpu.Tasks {
			st.tasks[cpu.CPU][t] = true
		}
	}
	return st
}

func (st *nodeState) cpus() []int {
	var out []int
	for c := range st.reserved {
		out = append(out, c)
	}
	sort.Ints(out)
	return out
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func run() int {
	ctx, cancel := context.WithTimeout(context.Background(), *limit)
	defer cancel()
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	res := &result{}
	out := map[string]any{"rate": *rate, "workers": *workers, "cooldown_ms": *cooldownMs, "nodes": *nNodes, "cpus_per_node": *nCPUs, "pods": *nPods, "hang_node": *hang, "timeout_ms": *timeoutMs, "seed": *seed,
		"slot_us": slotUS, "frame_slots": frameSlots}

	if *scxBin == "" {
		fmt.Println("FAIL setup: -scx-tt PATH is required: the nodes are scx_tt processes (scx_tt --simulated-node). Build it with `cargo build --release` at the repository's root and pass -scx-tt target/release/scx_tt (test.sh: SCX_TT=path)")
		return 2
	}
	scx, err := filepath.Abs(*scxBin)
	if err == nil {
		_, err = os.Stat(scx)
	}
	if err != nil {
		fmt.Printf("FAIL setup: scx_tt binary %s: %v (build it with `cargo build --release`)\n", *scxBin, err)
		return 2
	}

	dir := *workdir
	if dir == "" {
		d, err := os.MkdirTemp("", "scx-tt-cluster-")
		if err != nil {
			fmt.Println("FAIL setup:", err)
			return 1
		}
		dir = d
	}
	os.MkdirAll(dir, 0o755)
	defer func() {
		if !*keep {
			os.RemoveAll(dir)
		}
	}()
	fmt.Println("work directory:", dir)
	bin, _ := filepath.Abs(*binDir)
	fail := func(format string, args ...any) int {
		fmt.Printf("FAIL "+format+"\n", args...)
		*keep = true
		fmt.Println("kept for inspection:", dir)
		return 1
	}

	// scx_tt nodes. Every one is killed when run returns, whatever happens.
	token := fmt.Sprintf("node-token-%d", time.Now().UnixNano())
	tokenFile := filepath.Join(dir, "node-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return fail("token file: %v", err)
	}
	os.Chmod(tokenFile, 0o600)
	var names []string
	for i := 1; i <= *nNodes; i++ {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	hangName := ""
	if *hang {
		hangName = "n-hang"
		names = append(names, hangName)
	}
	answering := func() []string {
		var a []string
		for _, n := range names {
			if n != hangName {
				a = append(a, n)
			}
		}
		return a
	}
	nodes := map[string]*scxNode{}
	defer func() {
		for _, n := range nodes {
			n.kill()
		}
	}()
	cli := &nodeapi.Client{HTTP: nodeapi.NewHTTPClient(5 * time.Second), Token: token}
	on := func(n string) *nodeapi.Client { c := *cli; c.Endpoint = nodes[n].addr; return &c }
	nodeDied := func(n string, err error) int {
		fmt.Printf("scx_tt of %s: %v; the tail of %s:\n%s\n", n, err, nodes[n].log, nodes[n].tail(30))
		return fail("node %s: %v", n, err)
	}
	base := map[string]*nodeState{}
	tn := time.Now()
	for _, n := range names {
		port, err := controlplane.FreePort()
		if err != nil {
			return fail("free port: %v", err)
		}
		sn, err := newSCXNode(scx, dir, n, port, tokenFile, *nCPUs, *baseTask)
		if err != nil {
			return fail("node %s: %v", n, err)
		}
		nodes[n] = sn
		if err := sn.start(false); err != nil {
			return nodeDied(n, err)
		}
	}
	var maxReady time.Duration
	for _, n := range names {
		capy, err := nodes[n].waitReady(ctx, cli, 30*time.Second)
		if err != nil {
			return nodeDied(n, err)
		}
		base[n] = index(capy)
		if capy.API != nodeapi.API || capy.Node != n || (capy.FrameSlots != 0 && capy.FrameSlots != frameSlots) || (capy.SlotUS != 0 && capy.SlotUS != slotUS) {
			fmt.Printf("note: %s's capacity: api %q node %q slot_us %d frame_slots %d (expected %q %q %d %d)\n", n, capy.API, capy.Node, capy.SlotUS, capy.FrameSlots, nodeapi.API, n, slotUS, frameSlots)
		}
	}
	maxReady = time.Since(tn)
	fmt.Printf("%d scx_tt nodes ready (GET /v1/capacity 200) in %v; the plan's own tasks reserve (slots per frame): %v\n", len(names), maxReady.Round(time.Millisecond), baseSummary(base[names[0]]))
	out["nodes_ready_ms"] = ms(maxReady)
	if *hang {
		if err := nodes[hangName].signal(syscall.SIGSTOP); err != nil {
			return nodeDied(hangName, err)
		}
	}

	// Control plane.
	t0 := time.Now()
	cp, err := controlplane.Start(ctx, dir, filepath.Join(bin, "kube-apiserver"))
	if err != nil {
		return fail("control plane: %v", err)
	}
	defer cp.Stop()
	fmt.Printf("etcd ready in %v, kube-apiserver ready in %v\n", cp.EtcdStart.Round(time.Millisecond), cp.APIStart.Round(time.Millisecond))
	out["etcd_start_ms"], out["apiserver_start_ms"] = ms(cp.EtcdStart), ms(cp.APIStart)
	cs := cp.Client

	for _, n := range names {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n,
			Labels:      map[string]string{"kubernetes.io/hostname": n},
			Annotations: map[string]string{nodeapi.AnnotationEndpoint: nodes[n].addr}}}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			return fail("create node: %v", err)
		}
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(strconv.Itoa(*nCPUs + 1)),
			v1.ResourceMemory: resource.MustParse("64Gi"), v1.ResourcePods: resource.MustParse("500")}
		created.Status = v1.NodeStatus{Capacity: rl, Allocatable: rl, Phase: v1.NodeRunning,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			return fail("node status: %v", err)
		}
	}

	// Scheduler.
	kc, err := cp.Kubeconfig()
	if err != nil {
		return fail("kubeconfig: %v", err)
	}
	schedCfg := filepath.Join(dir, "scheduler.yaml")
	os.WriteFile(schedCfg, []byte(fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: %s
  pluginConfig:
  - name: %s
    args:
      tokenFile: %s
      timeoutMs: %d
      downCooldownMs: %d
`, kc, "ScxTT", "ScxTT", tokenFile, *timeoutMs, *cooldownMs)), 0o644)

	// Watch pods and events before anything is scheduled.
	var mu sync.Mutex
	created := map[string]time.Time{}
	bound := map[string]time.Time{}
	failed := map[string]time.Time{}
	failMsg := map[string]string{}
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	inf := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	onPod := func(obj any) {
		p, ok := obj.(*v1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		mu.Lock()
		if _, seen := bound[p.Name]; !seen {
			bound[p.Name] = now
		}
		mu.Unlock()
		poke()
	}
	inf.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onPod, UpdateFunc: func(_, o any) { onPod(o) }})
	onEvent := func(obj any) {
		e, ok := obj.(*eventsv1.Event)
		if !ok || e.Reason != "FailedScheduling" || e.Regarding.Kind != "Pod" {
			return
		}
		now := time.Now()
		mu.Lock()
		if _, seen := failed[e.Regarding.Name]; !seen {
			failed[e.Regarding.Name] = now
		}
		failMsg[e.Regarding.Name] = e.Note
		mu.Unlock()
		poke()
	}
	inf.Events().V1().Events().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: onEvent, UpdateFunc: func(_, o any) { onEvent(o) }})
	inf.Start(ctx.Done())
	inf.WaitForCacheSync(ctx.Done())

	t1 := time.Now()
	if err := cp.StartScheduler(ctx, filepath.Join(bin, "scx-tt-scheduler"), schedCfg); err != nil {
		return fail("scheduler: %v", err)
	}
	mkPod := func(name string, ann map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "rt", Image: "pause:spike",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}}}}}}
	}
	// nodesAlive fails when a node's scx_tt exited (the stopped one included).
	nodesAlive := func() (string, error) {
		for _, n := range names {
			if err := nodes[n].exitErr(); err != nil {
				return n, err
			}
		}
		return "", nil
	}
	// waitSettled waits until each named pod is bound or has a
	// FailedScheduling event (seen after since).
	waitSettled := func(podNames []string, since time.Time, lim time.Duration) (undecided []string, rc int) {
		deadline := time.Now().Add(lim)
		for {
			undecided = undecided[:0]
			mu.Lock()
			for _, p := range podNames {
				_, b := bound[p]
				f, ok := failed[p]
				if !b && !(ok && !f.Before(since)) {
					undecided = append(undecided, p)
				}
			}
			mu.Unlock()
			if len(undecided) == 0 {
				return nil, 0
			}
			if err := cp.Exited("scheduler"); err != nil {
				return undecided, fail("scheduler: %v", err)
			}
			if n, err := nodesAlive(); err != nil {
				return undecided, nodeDied(n, err)
			}
			if time.Now().After(deadline) {
				return undecided, 0
			}
			select {
			case <-ctx.Done():
				return undecided, fail("%v with %d pods undecided", ctx.Err(), len(undecided))
			case <-changed:
			case <-time.After(200 * time.Millisecond):
			}
		}
	}

	// Warm-up: a plain pod, bound once the scheduler runs.
	if _, err := cs.CoreV1().Pods("default").Create(ctx, mkPod("warmup", nil), metav1.CreateOptions{}); err != nil {
		return fail("warm-up pod: %v", err)
	}
	if und, rc := waitSettled([]string{"warmup"}, time.Time{}, 2*time.Minute); rc != 0 {
		return rc
	} else if len(und) > 0 {
		return fail("the scheduler never bound the warm-up pod")
	}
	mu.Lock()
	_, ok := bound["warmup"]
	msg := failMsg["warmup"]
	mu.Unlock()
	if !ok {
		return fail("the scheduler refused the warm-up pod: %s", msg)
	}
	schedStart := time.Since(t1)
	fmt.Printf("scheduler bound its first pod %v after its start; control plane up in %v\n", schedStart.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	out["scheduler_first_bind_ms"], out["control_plane_total_ms"] = ms(schedStart), ms(time.Since(t0))

	// Pods: util 0.050-0.450 per vCPU, latency 40-800 ms (with 10 ms slots
	// a vCPU then reserves a period of 2-60 slots), 1 (60 %), 2 (30 %) or 4
	// (10 %) vCPUs.
	rng := rand.New(rand.NewSource(*seed))
	type podSpec struct {
		name string
		ann  map[string]string
	}
	var specs []podSpec
	for i := 0; i < *nPods; i++ {
		name := fmt.Sprintf("rt-%04d", i)
		if rng.Float64() < *plainFrac {
			specs = append(specs, podSpec{"plain-" + name, nil})
			continue
		}
		v := 1
		switch x := rng.Float64(); {
		case x < 0.1:
			v = 4
		case x < 0.4:
			v = 2
		}
		specs = append(specs, podSpec{name, map[string]string{
			nodeapi.AnnotationUtil:      strconv.FormatFloat(0.05+float64(rng.Intn(401))/1000, 'f', 3, 64),
			nodeapi.AnnotationLatencyUS: strconv.Itoa(40000 + 10000*rng.Intn(77)),
			nodeapi.AnnotationVCPUs:     strconv.Itoa(v)}})
	}
	// util 1 is refused: scx_tt's rule is 0 < util < 1.
	specs = append(specs, podSpec{"bad-util", map[string]string{nodeapi.AnnotationUtil: "1", nodeapi.AnnotationLatencyUS: "100000"}})
	info := map[string]*podInfo{} // pod name (without namespace) -> its request and reservation
	addInfo := func(name string, ann map[string]string) {
		r, ours, fe := nodeapi.FromAnnotations("default/"+name, ann)
		if !ours || fe != nil {
			return
		}
		_, _, pf, ok := reservation(r.Timing, frameSlots, slotUS)
		if !ok {
			pf = -1
		}
		info[name] = &podInfo{req: r, perFrame: pf}
	}
	for _, s := range specs {
		addInfo(s.name, s.ann)
	}
	t2 := time.Now()
	work := make(chan podSpec)
	var wg sync.WaitGroup
	var createErrs []string
	for w := 0; w < *workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range work {
				mu.Lock()
				created[s.name] = time.Now()
				mu.Unlock()
				if _, err := cs.CoreV1().Pods("default").Create(ctx, mkPod(s.name, s.ann), metav1.CreateOptions{}); err != nil {
					mu.Lock()
					createErrs = append(createErrs, s.name+": "+err.Error())
					mu.Unlock()
				}
			}
		}()
	}
	for i, s := range specs {
		if *rate > 0 {
			time.Sleep(time.Until(t2.Add(time.Duration(float64(i) / *rate * float64(time.Second)))))
		}
		work <- s
	}
	close(work)
	wg.Wait()
	submit := time.Since(t2)
	res.check(len(createErrs) == 0, "create", "%d pods created in %v by %d workers; errors: %v", len(specs), submit.Round(time.Millisecond), *workers, createErrs)

	var specNames []string
	for _, s := range specs {
		specNames = append(specNames, s.name)
	}
	und, rc := waitSettled(specNames, time.Time{}, *limit)
	if rc != 0 {
		return rc
	}
	if len(und) > 0 {
		return fail("timeout: %d pods undecided", len(und))
	}
	allDone := time.Since(t2)
	// A refused pod may be retried and bound later (e.g. after a Reserve
	// race); give the queue a moment, then read the final state.
	time.Sleep(2 * time.Second)
	listPods := func() (map[string]*v1.Pod, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		m := map[string]*v1.Pod{}
		for i := range pods.Items {
			m[pods.Items[i].Name] = &pods.Items[i]
		}
		return m, nil
	}
	final, err := listPods()
	if err != nil {
		return fail("list pods: %v", err)
	}

	var place, refuse []time.Duration
	nBound, nRefused, nPlainBound, nPlain := 0, 0, 0, 0
	var refusedRT []string
	mu.Lock()
	for _, s := range specs {
		p := final[s.name]
		if s.ann == nil {
			nPlain++
		}
		if p != nil && p.Spec.NodeName != "" {
			nBound++
			if s.ann == nil {
				nPlainBound++
			}
			place = append(place, bound[s.name].Sub(created[s.name]))
		} else if _, ok := failed[s.name]; ok {
			nRefused++
			refuse = append(refuse, failed[s.name].Sub(created[s.name]))
			if info[s.name] != nil {
				refusedRT = append(refusedRT, s.name)
			}
		}
	}
	perNode := map[string]int{}
	for _, s := range specs {
		if p := final[s.name]; p != nil && p.Spec.NodeName != "" && s.ann != nil {
			perNode[p.Spec.NodeName]++
		}
	}
	badMsg := failMsg["bad-util"]
	var hangMsgs int
	for _, m := range failMsg {
		if strings.Contains(m, "did not answer") {
			hangMsgs++
		}
	}
	mu.Unlock()
	fmt.Printf("pods: %d submitted (%d plain), %d bound, %d refused (Pending with FailedScheduling) in %v; per node (real-time pods): %v\n",
		len(specs), nPlain, nBound, nRefused, allDone.Round(time.Millisecond), perNode)
	fmt.Printf("placement time (create -> bound seen): p50 %.1f ms, p99 %.1f ms, max %.1f ms over %d pods; throughput %.1f pods/s\n",
		ms(pct(place, 0.5)), ms(pct(place, 0.99)), ms(pct(place, 1)), len(place), float64(nBound)/allDone.Seconds())
	fmt.Printf("refusal time (create -> FailedScheduling seen): p50 %.1f ms, p99 %.1f ms over %d pods\n",
		ms(pct(refuse, 0.5)), ms(pct(refuse, 0.99)), len(refuse))
	out["submitted"], out["plain"], out["bound"], out["refused"] = len(specs), nPlain, nBound, nRefused
	out["per_node"], out["all_settled_ms"], out["submit_ms"] = perNode, ms(allDone), ms(submit)
	out["place_p50_ms"], out["place_p99_ms"], out["place_max_ms"] = ms(pct(place, 0.5)), ms(pct(place, 0.99)), ms(pct(place, 1))
	out["refuse_p50_ms"], out["refuse_p99_ms"] = ms(pct(refuse, 0.5)), ms(pct(refuse, 0.99))

	res.check(nBound+nRefused == len(specs), "settled", "%d bound + %d refused of %d", nBound, nRefused, len(specs))
	res.check(nPlainBound == nPlain, "plain-pods-skipped", "%d of %d pods without timing annotations bound", nPlainBound, nPlain)
	res.check(strings.Contains(badMsg, nodeapi.AnnotationUtil) && final["bad-util"] != nil && final["bad-util"].Spec.NodeName == "",
		"bad-annotation-refused", "bad-util (util 1) pending with event %q", badMsg)
	res.check(nBound > nPlain && len(refusedRT) > 0, "mix", "the run both placed and refused real-time pods (%d placed, %d refused)", nBound-nPlain, len(refusedRT))

	// checkState compares every answering node's capacity with the plan's
	// reservation (base) plus the recomputed slots of the pods bound to it.
	checkState := func(label string) (map[string]*nodeState, []string) {
		var problems []string
		prob := func(f string, a ...any) { problems = append(problems, fmt.Sprintf(f, a...)) }
		pods, err := listPods()
		if err != nil {
			prob("list pods: %v", err)
			return nil, problems
		}
		want := map[string]map[string]*podInfo{} // node -> task -> pod
		owner := map[string]string{}             // task -> node it is bound to
		for name, p := range pods {
			pi := info[name]
			if pi == nil || p.Spec.NodeName == "" || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
				continue // not a real-time pod, not bound, or ended (released)
			}
			if want[p.Spec.NodeName] == nil {
				want[p.Spec.NodeName] = map[string]*podInfo{}
			}
			for _, t := range nodeapi.TaskNames(pi.req.Name, pi.req.VCPUs) {
				want[p.Spec.NodeName][t] = pi
				owner[t] = p.Spec.NodeName
			}
		}
		states := map[string]*nodeState{}
		var fullest []string
		for _, n := range answering() {
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			capy, err := on(n).Capacity(cctx)
			cancel()
			if err != nil {
				prob("%s: capacity: %v", n, err)
				continue
			}
			st := index(capy)
			states[n] = st
			seen := map[string]int{}
			podCPU := map[string]map[int]bool{}
			var maxRes int64
			for _, c := range st.cpus() {
				sum := base[n].reserved[c]
				for t := range base[n].tasks[c] {
					if !st.tasks[c][t] {
						prob("%s cpu %d: plan task %s missing", n, c, t)
					}
				}
				for t := range st.tasks[c] {
					if base[n].tasks[c][t] {
						continue
					}
					pi := want[n][t]
					if pi == nil {
						if o := owner[t]; o != "" {
							prob("%s cpu %d holds %s, whose pod is bound to %s", n, c, t, o)
						} else {
							prob("%s cpu %d holds %s, no pod bound to it (leaked or never bound)", n, c, t)
						}
						continue
					}
					seen[t]++
					if podCPU[pi.req.Name] == nil {
						podCPU[pi.req.Name] = map[int]bool{}
					}
					if podCPU[pi.req.Name][c] {
						prob("%s: two vCPUs of %s on cpu %d", n, pi.req.Name, c)
					}
					podCPU[pi.req.Name][c] = true
					sum += pi.perFrame
				}
				if st.reserved[c] != sum {
					prob("%s cpu %d reports %d reserved slots; plan %d + recomputed pods = %d", n, c, st.reserved[c], base[n].reserved[c], sum)
				}
				if sum > frameSlots || st.reserved[c] > frameSlots {
					prob("%s cpu %d over-admitted: %d (recomputed %d) > %d slots per frame", n, c, st.reserved[c], sum, frameSlots)
				}
				for _, cpu := range capy.CPUs {
					if cpu.CPU == c && (cpu.Utilisation-float64(cpu.ReservedSlots)/frameSlots > 1e-9 || float64(cpu.ReservedSlots)/frameSlots-cpu.Utilisation > 1e-9) {
						prob("%s cpu %d utilisation %v != reserved_slots/frame_slots %d/%d", n, c, cpu.Utilisation, cpu.ReservedSlots, frameSlots)
					}
				}
				if sum > maxRes {
					maxRes = sum
				}
			}
			for t, pi := range want[n] {
				if seen[t] != 1 {
					prob("%s bound to %s: the node lists its task %s %d times (the pod is bound to a node that did not admit it)", pi.req.Name, n, t, seen[t])
				}
			}
			fullest = append(fullest, fmt.Sprintf("%s %d/%d", n, maxRes, frameSlots))
		}
		fmt.Printf("%s: fullest CPU per node (reserved slots per frame): %s\n", label, strings.Join(fullest, ", "))
		if len(problems) > 12 {
			problems = append(problems[:12], fmt.Sprintf("... and %d more", len(problems)-12))
		}
		return states, problems
	}

	statesBurst, problems := checkState("after the burst")
	res.check(len(problems) == 0, "no-over-admission",
		"every CPU's reserved slots == plan + slots recomputed from the bound pods' annotations, <= %d; each node holds exactly the pods bound to it, vCPUs on distinct CPUs; problems: %v", frameSlots, problems)

	// Refused pods: none fits an answering node now (by the node's dry run);
	// count the dry-run refusals where the sum rule alone says it would fit
	// (the planner's exact test is stricter than the sum: information only).
	fits, stricter, asked := []string{}, 0, 0
	for _, name := range refusedRT {
		pi := info[name]
		for _, n := range answering() {
			st := statesBurst[n]
			if st == nil {
				continue
			}
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			d, err := on(n).DryRun(cctx, pi.req)
			cancel()
			asked++
			if err != nil {
				fits = append(fits, fmt.Sprintf("%s on %s: %v", name, n, err))
				continue
			}
			if d.Admit {
				fits = append(fits, name+" on "+n)
				continue
			}
			var resv []int64
			for _, c := range st.cpus() {
				resv = append(resv, st.reserved[c])
			}
			if pi.perFrame > 0 && fitsBySum(resv, pi.req.VCPUs, pi.perFrame, frameSlots) {
				stricter++
			}
		}
	}
	sort.Strings(fits)
	res.check(len(fits) == 0, "refused-pods-do-not-fit", "%d dry runs of the %d refused real-time pods on the answering nodes; admitted now: %v", asked, len(refusedRT), fits)
	fmt.Printf("info: %d of those %d dry-run refusals were of a pod that fits by the sum of slots alone (the planner's exact test is stricter)\n", stricter, asked)
	out["dry_run_refusals_fitting_by_sum"] = stricter

	// Delete: the refused pods first (so that the scheduler does not retry
	// them into the room freed), then a share of the bound real-time pods;
	// each node must drop exactly their slots, and copies of them must then
	// be placed.
	zero := int64(0)
	del := metav1.DeleteOptions{GracePeriodSeconds: &zero}
	if *deleteFrac > 0 {
		for _, name := range append(append([]string(nil), refusedRT...), "bad-util") {
			cs.CoreV1().Pods("default").Delete(ctx, name, del)
		}
		pods, err := listPods()
		if err != nil {
			return fail("list pods: %v", err)
		}
		var boundRT []string
		for name, p := range pods {
			if info[name] != nil && p.Spec.NodeName != "" {
				boundRT = append(boundRT, name)
			}
		}
		sort.Strings(boundRT)
		k := int(*deleteFrac*float64(len(boundRT)) + 0.5)
		if k < 1 {
			k = 1
		}
		if k > len(boundRT) {
			k = len(boundRT)
		}
		before, problems := checkState("before the delete")
		if len(problems) > 0 {
			fmt.Println("note: state before the delete:", problems)
		}
		// Would a copy of each bound pod (a new name, the same timing) be
		// placed now? A dry run on every answering node. The victims are
		// taken first among the pods whose copy every node refuses, so that
		// the copies show a pod refused for capacity placed once room is
		// freed; then among the others, spread over the names.
		copyRefused := map[string]bool{}
		for _, v := range boundRT {
			r := *info[v].req
			r.Name = "default/again-" + v
			admit := false
			for _, n := range answering() {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				d, err := on(n).DryRun(cctx, &r)
				cancel()
				if err == nil && d.Admit {
					admit = true
				}
			}
			copyRefused[v] = !admit
		}
		var victims, refusedFirst, others []string
		for _, v := range boundRT {
			if copyRefused[v] {
				refusedFirst = append(refusedFirst, v)
			} else {
				others = append(others, v)
			}
		}
		for _, group := range [][]string{refusedFirst, others} {
			want := k - len(victims)
			if want > len(group) {
				want = len(group)
			}
			for i := 0; i < want; i++ {
				victims = append(victims, group[i*len(group)/want])
			}
		}
		sort.Strings(victims)
		refusedEverywhere := 0
		refusedBefore := make([]bool, len(victims))
		for i, v := range victims {
			if copyRefused[v] {
				refusedEverywhere++
				refusedBefore[i] = true
			}
		}
		// Expected drop per node and CPU, from the node's own placement.
		drop := map[string]map[int]int64{}
		gone := map[string]bool{}
		for _, v := range victims {
			pi := info[v]
			n := pods[v].Spec.NodeName
			for _, t := range nodeapi.TaskNames(pi.req.Name, pi.req.VCPUs) {
				gone[t] = true
				if st := before[n]; st != nil {
					for c, ts := range st.tasks {
						if ts[t] {
							if drop[n] == nil {
								drop[n] = map[int]int64{}
							}
							drop[n][c] += pi.perFrame
						}
					}
				}
			}
		}
		tDel := time.Now()
		for _, v := range victims {
			if err := cs.CoreV1().Pods("default").Delete(ctx, v, del); err != nil {
				res.check(false, "delete", "delete %s: %v", v, err)
			}
		}
		// Wait until no node lists a victim's task.
		var after map[string]*nodeState
		var freedIn time.Duration
		for {
			left := 0
			after = map[string]*nodeState{}
			for _, n := range answering() {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				capy, err := on(n).Capacity(cctx)
				cancel()
				if err != nil {
					left++
					continue
				}
				after[n] = index(capy)
				for _, ts := range after[n].tasks {
					for t := range ts {
						if gone[t] {
							left++
						}
					}
				}
			}
			if left == 0 {
				freedIn = time.Since(tDel)
				break
			}
			if time.Since(tDel) > 15*time.Second || ctx.Err() != nil {
				freedIn = -1
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		var dprob []string
		for _, n := range answering() {
			if before[n] == nil || after[n] == nil {
				continue
			}
			for _, c := range before[n].cpus() {
				if w := before[n].reserved[c] - drop[n][c]; after[n].reserved[c] != w {
					dprob = append(dprob, fmt.Sprintf("%s cpu %d: %d reserved slots after, %d before - %d freed = %d expected", n, c, after[n].reserved[c], before[n].reserved[c], drop[n][c], w))
				}
				for t := range before[n].tasks[c] {
					if !gone[t] && !after[n].tasks[c][t] {
						dprob = append(dprob, fmt.Sprintf("%s cpu %d lost %s", n, c, t))
					}
				}
				for t := range after[n].tasks[c] {
					if !before[n].tasks[c][t] {
						dprob = append(dprob, fmt.Sprintf("%s cpu %d gained %s", n, c, t))
					}
				}
			}
		}
		var freedSlots int64
		for _, m := range drop {
			for _, d := range m {
				freedSlots += d
			}
		}
		out["deleted"], out["delete_freed_ms"], out["delete_freed_slots"] = len(victims), ms(freedIn), freedSlots
		res.check(freedIn >= 0 && len(dprob) == 0, "delete-frees-capacity",
			"%d bound pods deleted (%v); their tasks left every node after %v; each CPU dropped by exactly their recomputed slots (%d slots in all); problems: %v",
			len(victims), victims, freedIn.Round(time.Millisecond), freedSlots, dprob)

		// Copies of the victims, as new pods.
		var again []string
		tAgain := time.Now()
		for _, v := range victims {
			name := "again-" + v
			ann := map[string]string{}
			for k, val := range final[v].Annotations {
				ann[k] = val
			}
			addInfo(name, ann)
			again = append(again, name)
			mu.Lock()
			created[name] = time.Now()
			mu.Unlock()
			if _, err := cs.CoreV1().Pods("default").Create(ctx, mkPod(name, ann), metav1.CreateOptions{}); err != nil {
				res.check(false, "resubmit", "create %s: %v", name, err)
			}
		}
		und, rc := waitSettled(again, tAgain, 60*time.Second)
		if rc != 0 {
			return rc
		}
		pods, _ = listPods()
		// Every copy placed is what the check wants; the freed room need
		// not hold all of them (they may be placed in another order, on
		// other CPUs or nodes, than the pods deleted), but a copy left
		// unplaced must be refused by a dry run on every answering node now.
		nAgain, nAgainRefusedBefore := 0, 0
		var notPlaced, unplacedFits []string
		for i, a := range again {
			if p := pods[a]; p != nil && p.Spec.NodeName != "" {
				nAgain++
				if refusedBefore[i] {
					nAgainRefusedBefore++
				}
				continue
			}
			mu.Lock()
			notPlaced = append(notPlaced, a+": "+failMsg[a])
			mu.Unlock()
			for _, n := range answering() {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				d, err := on(n).DryRun(cctx, info[a].req)
				cancel()
				if err != nil || d.Admit {
					unplacedFits = append(unplacedFits, fmt.Sprintf("%s on %s (%v)", a, n, err))
				}
			}
		}
		out["resubmitted"], out["resubmitted_bound"], out["resubmitted_refused_before"] = len(again), nAgain, refusedEverywhere
		res.check(nAgainRefusedBefore > 0 && len(unplacedFits) == 0 && len(und) == 0, "freed-room-placed",
			"%d copies of the deleted pods submitted as new pods: %d bound, %d of them refused by a dry run on every node before the delete; not placed: %v; of those, admitted by a dry run now (must be none): %v",
			len(again), nAgain, nAgainRefusedBefore, notPlaced, unplacedFits)
		// A pod that ends (no kubelet here: the driver sets its phase to
		// Succeeded) must be released the same way.
		var ender string
		for _, name := range boundRT {
			if pods[name] != nil && pods[name].Spec.NodeName != "" {
				isVictim := false
				for _, v := range victims {
					isVictim = isVictim || v == name
				}
				if !isVictim {
					ender = name
					break
				}
			}
		}
		if ender == "" {
			res.check(false, "end-frees-capacity", "no bound real-time pod left to end")
		} else {
			p := pods[ender].DeepCopy()
			n := p.Spec.NodeName
			p.Status.Phase = v1.PodSucceeded
			te := time.Now()
			_, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
			tasks := nodeapi.TaskNames(info[ender].req.Name, info[ender].req.VCPUs)
			var endedIn time.Duration = -1
			for err == nil && time.Since(te) < 15*time.Second && ctx.Err() == nil {
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				capy, cerr := on(n).Capacity(cctx)
				cancel()
				if cerr == nil {
					held := false
					for _, c := range capy.CPUs {
						for _, t := range c.Tasks {
							for _, w := range tasks {
								held = held || t == w
							}
						}
					}
					if !held {
						endedIn = time.Since(te)
						break
					}
				}
				time.Sleep(20 * time.Millisecond)
			}
			out["end_freed_ms"] = ms(endedIn)
			res.check(err == nil && endedIn >= 0, "end-frees-capacity", "%s on %s set to phase Succeeded: its tasks left the node after %v (error: %v)", ender, n, endedIn.Round(time.Millisecond), err)
		}
		_, problems = checkState("after the delete, resubmit and end")
		res.check(len(problems) == 0, "no-over-admission-after-delete", "node state == plan + recomputed bound pods; problems: %v", problems)
	}

	// Restart: SIGKILL the busiest answering node's scx_tt, start it again
	// with --resume on the same run dir, port and token.
	if *restart {
		states, _ := checkState("before the restart")
		victim, most := "", -1
		for _, n := range answering() {
			if st := states[n]; st != nil {
				k := 0
				for _, ts := range st.tasks {
					k += len(ts)
				}
				if k > most {
					victim, most = n, k
				}
			}
		}
		var rprob, cprob []string
		var readyIn time.Duration
		if victim == "" {
			rprob = append(rprob, "no node state to compare")
		} else {
			sn := nodes[victim]
			beforeSt := states[victim]
			sn.signal(syscall.SIGKILL)
			if err, ok := sn.wait(5 * time.Second); !ok {
				rprob = append(rprob, "did not die on SIGKILL")
			} else {
				fmt.Printf("restart: %s's scx_tt killed (%v) holding %d task entries (generation %d)\n", victim, err, most, beforeSt.capy.Generation)
			}
			tr := time.Now()
			if err := sn.start(true); err != nil {
				return nodeDied(victim, err)
			}
			capy, err := sn.waitReady(ctx, cli, 30*time.Second)
			readyIn = time.Since(tr)
			if err != nil {
				return nodeDied(victim, err)
			}
			afterSt := index(capy)
			// Node-wide: the same tasks and the same slots in all.
			all := func(st *nodeState) (map[string]bool, int64) {
				ts, sum := map[string]bool{}, int64(0)
				for c, m := range st.tasks {
					for t := range m {
						ts[t] = true
					}
					sum += st.reserved[c]
				}
				return ts, sum
			}
			bt, bs := all(beforeSt)
			at, as := all(afterSt)
			if b, a := strings.Join(sortedKeys(bt), ","), strings.Join(sortedKeys(at), ","); a != b || bs != as {
				rprob = append(rprob, fmt.Sprintf("node-wide: %d tasks and %d reserved slots before, %d tasks and %d slots after; before [%s], after [%s]", len(bt), bs, len(at), as, b, a))
			}
			// CPU by CPU: each task back on the CPU it had.
			for _, c := range beforeSt.cpus() {
				b, a := strings.Join(sortedKeys(beforeSt.tasks[c]), ","), strings.Join(sortedKeys(afterSt.tasks[c]), ",")
				if afterSt.reserved[c] != beforeSt.reserved[c] || a != b {
					cprob = append(cprob, fmt.Sprintf("cpu %d: %d slots [%s] before, %d slots [%s] after", c, beforeSt.reserved[c], b, afterSt.reserved[c], a))
				}
			}
			if len(afterSt.reserved) != len(beforeSt.reserved) {
				cprob = append(cprob, fmt.Sprintf("%d CPUs before, %d after", len(beforeSt.reserved), len(afterSt.reserved)))
			}
			fmt.Printf("restart: %s's scx_tt --resume answered in %v (generation %d)\n", victim, readyIn.Round(time.Millisecond), capy.Generation)
			if len(rprob)+len(cprob) > 0 {
				fmt.Printf("the tail of %s:\n%s\n", sn.log, sn.tail(20))
			}
		}
		out["restart_node"], out["restart_ready_ms"] = victim, ms(readyIn)
		res.check(len(rprob) == 0, "restart-keeps-admissions", "%s killed (SIGKILL) and restarted with --resume: the same tasks and reserved slots on the node; problems: %v", victim, rprob)
		res.check(len(cprob) == 0 && victim != "", "restart-keeps-cpus", "after the restart every CPU of %s holds the same tasks and reserved slots as before the kill; differences: %v", victim, cprob)
		_, problems := checkState("after the restart")
		res.check(len(problems) == 0, "no-over-admission-after-restart", "node state == plan + recomputed bound pods; problems: %v", problems)
	}

	// The stopped node, measured from the client side: the plugin logs every
	// call that did not answer with its elapsed time; a probe from here shows
	// that the node accepts the connection and does not answer.
	if *hang {
		var maxElapsed time.Duration
		nLogged := 0
		if b, err := os.ReadFile(filepath.Join(dir, "scheduler.log")); err == nil {
			re := regexp.MustCompile(`scx_tt node API did not answer.*?node="` + hangName + `".*?elapsed="([^"]+)"`)
			for _, m := range re.FindAllStringSubmatch(string(b), -1) {
				if d, err := time.ParseDuration(m[1]); err == nil {
					nLogged++
					if d > maxElapsed {
						maxElapsed = d
					}
				}
			}
		}
		deadline := time.Duration(*timeoutMs) * time.Millisecond
		probe := "connect failed"
		if c, err := net.DialTimeout("tcp", nodes[hangName].addr, time.Second); err == nil {
			c.Close()
			ps := time.Now()
			cctx, cancel := context.WithTimeout(ctx, deadline)
			_, err := on(hangName).Capacity(cctx)
			cancel()
			probe = fmt.Sprintf("TCP connects; GET /v1/capacity with a %v deadline gave up after %v (%v)", deadline, time.Since(ps).Round(time.Millisecond), err)
		}
		pods, _ := listPods()
		onHang := 0 // real-time pods (plain pods do not ask the node and may land on it)
		for name, p := range pods {
			if p.Spec.NodeName == hangName && info[name] != nil {
				onHang++
			}
		}
		out["hang_logged"], out["hang_max_elapsed_ms"], out["hang_bound"] = nLogged, ms(maxElapsed), onHang
		fmt.Printf("stopped node %s: the scheduler gave up on %d calls, after at most %v; probe: %s\n", hangName, nLogged, maxElapsed.Round(time.Millisecond), probe)
		res.check(onHang == 0, "hang-node-filtered", "%d real-time pods bound to %s", onHang, hangName)
		res.check(nLogged > 0 && maxElapsed <= deadline+*holdMargin,
			"hang-node-not-waited-on", "%d calls to %s did not answer; the scheduler waited at most %v on one (deadline %v + margin %v)",
			nLogged, hangName, maxElapsed.Round(time.Millisecond), deadline, *holdMargin)
		res.check(hangMsgs > 0, "hang-node-reason", "%d FailedScheduling events name the node API that did not answer", hangMsgs)

		// Resume it (SIGCONT) and wait until it answers again before it is
		// asked to end: it holds the requests the scheduler gave up on.
		tc := time.Now()
		nodes[hangName].signal(syscall.SIGCONT)
		capy, err := nodes[hangName].waitReady(ctx, cli, 30*time.Second)
		var held []string
		if err == nil {
			for _, c := range capy.CPUs {
				for _, t := range c.Tasks {
					if !base[hangName].tasks[c.CPU][t] {
						held = append(held, t)
					}
				}
			}
		}
		out["hang_resume_answer_ms"] = ms(time.Since(tc))
		res.check(err == nil && len(held) == 0, "hang-node-resumes-empty", "after SIGCONT %s answered again in %v and holds no pod: %v (error: %v)",
			hangName, time.Since(tc).Round(time.Millisecond), held, err)
	}

	// Every scx_tt ends cleanly on SIGTERM (the stopped one after SIGCONT).
	var unclean []string
	var slowest time.Duration
	slowestName := ""
	for _, n := range names {
		tt := time.Now()
		err, ok := nodes[n].terminate(10 * time.Second)
		if !ok || err != nil {
			unclean = append(unclean, fmt.Sprintf("%s: %v (ended by itself within 10 s: %v)", n, err, ok))
		}
		if d := time.Since(tt); d > slowest {
			slowest, slowestName = d, n
		}
	}
	out["sigterm_exit_max_ms"] = ms(slowest)
	res.check(len(unclean) == 0, "nodes-end-on-sigterm", "every scx_tt exited with status 0 on SIGTERM, the slowest (%s) in %v; others: %v", slowestName, slowest.Round(time.Millisecond), unclean)

	fmt.Printf("%d passed, %d failed\n", len(res.checks), len(res.failures))
	out["passed"], out["failed"] = len(res.checks), res.failures
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(out, "", "  ")
		os.WriteFile(*jsonOut, b, 0o644)
	}
	if len(res.failures) > 0 {
		for _, n := range names {
			fmt.Printf("the tail of %s:\n%s\n", nodes[n].log, nodes[n].tail(10))
		}
		*keep = true
		fmt.Println("kept for inspection:", dir)
		return 1
	}
	return 0
}

// baseSummary prints the plan's own reserved slots per CPU.
func baseSummary(st *nodeState) string {
	var parts []string
	for _, c := range st.cpus() {
		if st.reserved[c] != 0 {
			parts = append(parts, fmt.Sprintf("cpu %d: %d", c, st.reserved[c]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
