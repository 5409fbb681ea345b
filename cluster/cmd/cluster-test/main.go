// Command cluster-test runs ScxTT against a real control plane: etcd
// (embedded), kube-apiserver and the scx-tt-scheduler (the upstream
// kube-scheduler with the plugin), all on 127.0.0.1. It starts stand-in
// scx_tt node APIs (internal/fakenode; to be replaced by scx_tt
// --simulated-node), creates one Node object per node, submits pods with
// random timings, waits until each is bound or Pending with a
// FailedScheduling event, and checks the outcome:
//
//   - every pod is bound or refused with an event; pods without timing
//     annotations are all bound (the plugin skips them);
//   - no over-admission: each node's state, recomputed independently from
//     the bound pods' annotations, has every CPU at utilisation <= 1, and the
//     node holds exactly the bound pods, each vCPU on a distinct CPU;
//   - no refused pod fits any answering node at the end;
//   - a node whose API hangs is filtered out, bound nothing, and no request
//     to it was held beyond the deadline (plus a margin).
//
// It prints the counts, placement times (p50/p99) and "N passed, N failed";
// its exit status is non-zero when a check fails.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"scx-tt/cluster/internal/controlplane"
	"scx-tt/cluster/internal/fakenode"
	"scx-tt/cluster/nodeapi"
)

var (
	binDir     = flag.String("bin", "bin", "directory holding kube-apiserver and scx-tt-scheduler")
	nNodes     = flag.Int("nodes", 5, "answering nodes")
	nCPUs      = flag.Int("cpus", 8, "CPUs managed per node (numbered 1..cpus)")
	nPods      = flag.Int("pods", 200, "pods to submit")
	plainFrac  = flag.Float64("plain", 0.05, "fraction of pods without timing annotations")
	hang       = flag.Bool("hang-node", true, "add one node whose API never answers")
	timeoutMs  = flag.Int("timeout-ms", 200, "the plugin's deadline per node API call")
	workers    = flag.Int("workers", 4, "concurrent pod creations")
	rate       = flag.Float64("rate", 0, "pods submitted per second (0: as fast as the workers go)")
	cooldownMs = flag.Int("cooldown-ms", 0, "the plugin's downCooldownMs (0: its default, 2000; negative: off, every cycle asks the hanging node)")
	seed       = flag.Int64("seed", 1, "random seed of the pod timings")
	limit      = flag.Duration("limit", 10*time.Minute, "give up after this long")
	keep       = flag.Bool("keep", false, "keep the work directory")
	workdir    = flag.String("workdir", "", "work directory (default: a new temporary one)")
	jsonOut    = flag.String("json", "", "also write the results as JSON to this file")
	holdMargin = flag.Duration("hold-margin", 150*time.Millisecond, "how far past the deadline a request to the hanging node may be held")
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

func run() int {
	ctx, cancel := context.WithTimeout(context.Background(), *limit)
	defer cancel()
	res := &result{}
	out := map[string]any{"rate": *rate, "workers": *workers, "cooldown_ms": *cooldownMs, "nodes": *nNodes, "cpus_per_node": *nCPUs, "pods": *nPods, "hang_node": *hang, "timeout_ms": *timeoutMs, "seed": *seed}

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

	// Control plane.
	t0 := time.Now()
	cp, err := controlplane.Start(ctx, dir, filepath.Join(bin, "kube-apiserver"))
	if err != nil {
		fmt.Println("FAIL control plane:", err)
		*keep = true
		return 1
	}
	defer cp.Stop()
	fmt.Printf("etcd ready in %v, kube-apiserver ready in %v\n", cp.EtcdStart.Round(time.Millisecond), cp.APIStart.Round(time.Millisecond))
	out["etcd_start_ms"], out["apiserver_start_ms"] = ms(cp.EtcdStart), ms(cp.APIStart)
	cs := cp.Client

	// Stand-in nodes.
	token := fmt.Sprintf("node-token-%d", time.Now().UnixNano())
	tokenFile := filepath.Join(dir, "node-token")
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	cpus := make([]int, *nCPUs)
	for i := range cpus {
		cpus[i] = i + 1
	}
	type nodeEnt struct {
		srv  *fakenode.Server
		addr string
	}
	nodes := map[string]*nodeEnt{}
	var names []string
	for i := 1; i <= *nNodes; i++ {
		names = append(names, fmt.Sprintf("n%d", i))
	}
	hangName := ""
	if *hang {
		hangName = "n-hang"
		names = append(names, hangName)
	}
	for _, n := range names {
		s := fakenode.New(n, cpus, token)
		s.Hang = n == hangName
		addr, err := s.Serve(ctx, "127.0.0.1:0")
		if err != nil {
			fmt.Println("FAIL node server:", err)
			return 1
		}
		nodes[n] = &nodeEnt{srv: s, addr: addr}
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n,
			Labels:      map[string]string{"kubernetes.io/hostname": n},
			Annotations: map[string]string{nodeapi.AnnotationEndpoint: addr}}}
		created, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			fmt.Println("FAIL create node:", err)
			return 1
		}
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(strconv.Itoa(*nCPUs + 1)),
			v1.ResourceMemory: resource.MustParse("64Gi"), v1.ResourcePods: resource.MustParse("500")}
		created.Status = v1.NodeStatus{Capacity: rl, Allocatable: rl, Phase: v1.NodeRunning,
			Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
				LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			fmt.Println("FAIL node status:", err)
			return 1
		}
	}

	// Scheduler.
	kc, err := cp.Kubeconfig()
	if err != nil {
		fmt.Println("FAIL kubeconfig:", err)
		return 1
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
	boundNode := map[string]string{}
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
			bound[p.Name], boundNode[p.Name] = now, p.Spec.NodeName
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
		fmt.Println("FAIL scheduler:", err)
		return 1
	}
	mkPod := func(name string, ann map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", Annotations: ann},
			Spec: v1.PodSpec{Containers: []v1.Container{{Name: "rt", Image: "pause:spike",
				Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}}}}}}
	}
	// Warm-up: a plain pod, bound once the scheduler runs.
	if _, err := cs.CoreV1().Pods("default").Create(ctx, mkPod("warmup", nil), metav1.CreateOptions{}); err != nil {
		fmt.Println("FAIL warm-up pod:", err)
		return 1
	}
	for {
		mu.Lock()
		_, ok := bound["warmup"]
		msg, refused := failMsg["warmup"]
		mu.Unlock()
		if ok {
			break
		}
		if refused {
			fmt.Println("FAIL the scheduler refused the warm-up pod:", msg)
			*keep = true
			return 1
		}
		if err := cp.Exited("scheduler"); err != nil {
			fmt.Println("FAIL scheduler:", err)
			*keep = true
			return 1
		}
		select {
		case <-ctx.Done():
			fmt.Println("FAIL scheduler never bound the warm-up pod")
			*keep = true
			return 1
		case <-time.After(20 * time.Millisecond):
		}
	}
	schedStart := time.Since(t1)
	fmt.Printf("scheduler bound its first pod %v after its start; control plane up in %v\n", schedStart.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond))
	out["scheduler_first_bind_ms"], out["control_plane_total_ms"] = ms(schedStart), ms(time.Since(t0))

	// Pods.
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
			nodeapi.AnnotationUtil:      strconv.FormatFloat(0.02+float64(rng.Intn(281))/1000, 'f', 3, 64),
			nodeapi.AnnotationLatencyUS: strconv.Itoa(1000 + 100*rng.Intn(191)),
			nodeapi.AnnotationVCPUs:     strconv.Itoa(v)}})
	}
	specs = append(specs, podSpec{"bad-util", map[string]string{nodeapi.AnnotationUtil: "1.5", nodeapi.AnnotationLatencyUS: "1000"}})
	expect := map[string]podSpec{}
	for _, s := range specs {
		expect[s.name] = s
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

	// Wait until every pod is bound or has a FailedScheduling event.
	settled := func() (int, int, int) {
		mu.Lock()
		defer mu.Unlock()
		b, f, w := 0, 0, 0
		for _, s := range specs {
			if _, ok := bound[s.name]; ok {
				b++
			} else if _, ok := failed[s.name]; ok {
				f++
			} else {
				w++
			}
		}
		return b, f, w
	}
	for {
		_, _, w := settled()
		if w == 0 {
			break
		}
		if err := cp.Exited("scheduler"); err != nil {
			fmt.Println("FAIL scheduler:", err)
			*keep = true
			return 1
		}
		select {
		case <-ctx.Done():
			b, f, w := settled()
			fmt.Printf("FAIL timeout: %d bound, %d refused, %d undecided\n", b, f, w)
			*keep = true
			return 1
		case <-changed:
		case <-time.After(200 * time.Millisecond):
		}
	}
	allDone := time.Since(t2)
	// A refused pod may be retried and bound later (e.g. after a Reserve
	// race); give the queue a moment, then read the final state.
	time.Sleep(2 * time.Second)
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Println("FAIL list pods:", err)
		return 1
	}
	final := map[string]*v1.Pod{}
	for i := range pods.Items {
		final[pods.Items[i].Name] = &pods.Items[i]
	}

	var place, refuse []time.Duration
	nBound, nRefused, nPlainBound, nPlain := 0, 0, 0, 0
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
		"bad-annotation-refused", "bad-util pending with event %q", badMsg)
	res.check(nBound > nPlain && nRefused > 1, "mix", "the run both placed and refused real-time pods (%d placed, %d refused)", nBound-nPlain, nRefused-1)

	// Over-admission: recompute each node's per-CPU load from the bound pods.
	nodeOf := map[string]string{} // "default/name" -> node
	reqOf := map[string]*nodeapi.Request{}
	for _, s := range specs {
		if s.ann == nil {
			continue
		}
		r, _, fe := nodeapi.FromAnnotations("default/"+s.name, s.ann)
		if fe != nil {
			continue
		}
		reqOf[r.Name] = r
		if p := final[s.name]; p != nil && p.Spec.NodeName != "" {
			nodeOf[r.Name] = p.Spec.NodeName
		}
	}
	over, mismatch := 0, []string{}
	maxLoad := map[string]float64{}
	cli := &nodeapi.Client{HTTP: nodeapi.NewHTTPClient(5 * time.Second), Token: token}
	for _, n := range names {
		if n == hangName {
			continue
		}
		cli.Endpoint = nodes[n].addr
		capy, err := cli.Capacity(ctx)
		if err != nil {
			mismatch = append(mismatch, n+": "+err.Error())
			continue
		}
		seen := map[string]map[int]bool{}
		for _, c := range capy.CPUs {
			var sum int64
			for _, t := range c.Tasks {
				name := t[:strings.LastIndex(t, "#")]
				r := reqOf[name]
				if r == nil {
					mismatch = append(mismatch, fmt.Sprintf("%s cpu %d holds unknown %s", n, c.CPU, t))
					continue
				}
				if nodeOf[name] != n {
					mismatch = append(mismatch, fmt.Sprintf("%s holds %s, bound to %q", n, name, nodeOf[name]))
				}
				if seen[name] == nil {
					seen[name] = map[int]bool{}
				}
				if seen[name][c.CPU] {
					mismatch = append(mismatch, fmt.Sprintf("%s: two vCPUs of %s on cpu %d", n, name, c.CPU))
				}
				seen[name][c.CPU] = true
				sum += fakenode.ToMicro(r.Timing.Util)
			}
			if sum > fakenode.Scale {
				over++
				mismatch = append(mismatch, fmt.Sprintf("%s cpu %d at %d/1000000", n, c.CPU, sum))
			}
			if fakenode.ToMicro(c.Utilisation) != sum {
				mismatch = append(mismatch, fmt.Sprintf("%s cpu %d reports %v, pods sum to %d/1000000", n, c.CPU, c.Utilisation, sum))
			}
			if f := float64(sum) / fakenode.Scale; f > maxLoad[n] {
				maxLoad[n] = f
			}
		}
		for name, node := range nodeOf {
			if node == n && len(seen[name]) != reqOf[name].VCPUs {
				mismatch = append(mismatch, fmt.Sprintf("%s bound to %s has %d of %d vCPUs reserved", name, n, len(seen[name]), reqOf[name].VCPUs))
			}
		}
	}
	res.check(over == 0 && len(mismatch) == 0, "no-over-admission",
		"per-CPU load recomputed from bound pods <= 1 on every CPU, node state == bound pods (max CPU load per node %v); problems: %v", maxLoad, mismatch)

	// Completeness: no refused pod fits an answering node now.
	fits := []string{}
	for name, r := range reqOf {
		if _, ok := nodeOf[name]; ok {
			continue
		}
		for _, n := range names {
			if n == hangName {
				continue
			}
			cli.Endpoint = nodes[n].addr
			if d, err := cli.DryRun(ctx, r); err == nil && d.Admit {
				fits = append(fits, name+" on "+n)
			}
		}
	}
	sort.Strings(fits)
	res.check(len(fits) == 0, "refused-pods-do-not-fit", "refused pods that a dry run now admits: %v", fits)

	// The hanging node.
	if *hang {
		hs := nodes[hangName].srv
		holds := hs.Holds()
		var maxHold time.Duration
		for _, h := range holds {
			if h > maxHold {
				maxHold = h
			}
		}
		// The scheduler logs each call that did not answer, with its elapsed time.
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
		out["hang_requests"], out["hang_max_hold_ms"], out["hang_max_elapsed_ms"], out["hang_logged"] = hs.Requests(), ms(maxHold), ms(maxElapsed), nLogged
		fmt.Printf("hanging node: %d requests, held at most %v at the node; the scheduler gave up after at most %v (%d logged)\n",
			hs.Requests(), maxHold.Round(time.Millisecond), maxElapsed.Round(time.Millisecond), nLogged)
		res.check(perNode[hangName] == 0, "hang-node-filtered", "%d pods bound to %s", perNode[hangName], hangName)
		res.check(len(holds) > 0 && maxHold <= deadline+*holdMargin && maxElapsed <= deadline+*holdMargin,
			"hang-node-not-waited-on", "%d requests held at most %v, scheduler waited at most %v (deadline %v + margin %v)",
			len(holds), maxHold.Round(time.Millisecond), maxElapsed.Round(time.Millisecond), deadline, *holdMargin)
		res.check(hangMsgs > 0, "hang-node-reason", "%d FailedScheduling events name the node API that did not answer", hangMsgs)
	}

	fmt.Printf("%d passed, %d failed\n", len(res.checks), len(res.failures))
	out["passed"], out["failed"] = len(res.checks), res.failures
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(out, "", "  ")
		os.WriteFile(*jsonOut, b, 0o644)
	}
	if len(res.failures) > 0 {
		*keep = true
		fmt.Println("kept for inspection:", dir)
		return 1
	}
	return 0
}
