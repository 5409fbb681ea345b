package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"scx-tt/cluster/nodeapi"
)

// scxNode is one scx_tt process in --simulated-node mode serving the node
// API on 127.0.0.1:port. It runs in its own process group (so that a
// terminal's SIGINT does not reach it and a signal reaches anything it
// starts) and dies with the driver (Pdeathsig) if the driver is killed.
type scxNode struct {
	name string
	dir  string // its --run-dir; also holds the plan, control socket, log
	addr string // 127.0.0.1:port
	bin  string
	args []string // without --resume
	log  string   // stdout and stderr of every start, appended

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	err    error
	starts int
}

// planJSON is the node's plan: slotUS-long slots, a frame of frameSlots,
// managed CPUs 1..cpus (housekeeping CPU 0) and, with base, one small plan
// task on CPU 1 reserving frameSlots/12 slots per frame (scx_tt refuses an
// empty task list, and a comm longer than the kernel's 15 characters: the
// simulated node never looks for the thread).
func planJSON(cpus int, base bool) []byte {
	managed := make([]int, cpus)
	for i := range managed {
		managed[i] = i + 1
	}
	tasks := []map[string]any{}
	if base {
		tasks = append(tasks, map[string]any{"name": "base", "class": "tt", "cpu": 1, "period": 12, "wcet": 1, "comm": "no-such-thread"})
	}
	b, _ := json.MarshalIndent(map[string]any{"version": 1, "slot_us": slotUS, "frame_slots": frameSlots,
		"cpus": map[string]any{"managed": managed, "housekeeping": []int{0}}, "tasks": tasks}, "", "  ")
	return b
}

func newSCXNode(bin, workdir, name string, port int, tokenFile string, cpus int, base bool) (*scxNode, error) {
	dir := filepath.Join(workdir, "node-"+name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	plan := filepath.Join(dir, "plan.json")
	if err := os.WriteFile(plan, planJSON(cpus, base), 0o644); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	return &scxNode{name: name, dir: dir, addr: addr, bin: bin, log: filepath.Join(dir, "scx_tt.log"),
		args: []string{"--table", plan, "--planner", "bss", "--simulated-node",
			"--control", filepath.Join(dir, "ctl.sock"), "--run-dir", dir,
			"--node-api", addr, "--node-token-file", tokenFile, "--node-name", name}}, nil
}

// start runs scx_tt (with --resume when resume is set).
func (n *scxNode) start(resume bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd != nil && !n.hasExited() {
		return fmt.Errorf("%s: already running", n.name)
	}
	f, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append([]string(nil), n.args...)
	if resume {
		args = append(args, "--resume")
	}
	fmt.Fprintf(f, "== cluster-test %s: %s %s\n", time.Now().Format(time.RFC3339Nano), n.bin, strings.Join(args, " "))
	cmd := exec.Command(n.bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", n.name, err)
	}
	n.cmd, n.exited, n.err = cmd, make(chan struct{}), nil
	n.starts++
	exited := n.exited
	go func() {
		err := cmd.Wait()
		f.Close()
		n.mu.Lock()
		n.err = err
		n.mu.Unlock()
		close(exited)
	}()
	return nil
}

func (n *scxNode) hasExited() bool {
	if n.exited == nil {
		return true
	}
	select {
	case <-n.exited:
		return true
	default:
		return false
	}
}

// exitErr is non-nil when the process has exited (with how it exited).
func (n *scxNode) exitErr() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || !n.hasExited() {
		return nil
	}
	if n.err == nil {
		return fmt.Errorf("scx_tt of %s exited (status 0)", n.name)
	}
	return fmt.Errorf("scx_tt of %s exited: %v", n.name, n.err)
}

// signal sends sig to the node's process group.
func (n *scxNode) signal(sig syscall.Signal) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cmd == nil || n.cmd.Process == nil || n.hasExited() {
		return errors.New("not running")
	}
	return syscall.Kill(-n.cmd.Process.Pid, sig)
}

// wait waits up to limit for the process to exit; it returns how it exited
// and whether it did.
func (n *scxNode) wait(limit time.Duration) (error, bool) {
	n.mu.Lock()
	ch := n.exited
	n.mu.Unlock()
	if ch == nil {
		return nil, true
	}
	select {
	case <-ch:
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.err, true
	case <-time.After(limit):
		return nil, false
	}
}

// kill ends the process group at once (SIGKILL; SIGCONT first in case it
// was stopped) and waits for it.
func (n *scxNode) kill() {
	n.signal(syscall.SIGCONT)
	n.signal(syscall.SIGKILL)
	n.wait(5 * time.Second)
}

// terminate asks the node to end (SIGCONT, SIGTERM) and waits up to limit;
// after that it is killed. It returns the exit error (nil: status 0) and
// whether it ended by itself in time.
func (n *scxNode) terminate(limit time.Duration) (error, bool) {
	if n.hasExitedLocked() {
		err, _ := n.wait(0)
		return err, true
	}
	n.signal(syscall.SIGCONT)
	n.signal(syscall.SIGTERM)
	err, ok := n.wait(limit)
	if !ok {
		n.kill()
	}
	return err, ok
}

func (n *scxNode) hasExitedLocked() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hasExited()
}

// waitReady polls GET /v1/capacity until it answers 200; it fails at once
// when the process exits.
func (n *scxNode) waitReady(ctx context.Context, cli *nodeapi.Client, limit time.Duration) (*nodeapi.Capacity, error) {
	deadline := time.Now().Add(limit)
	var last error
	for time.Now().Before(deadline) {
		if err := n.exitErr(); err != nil {
			return nil, err
		}
		c := *cli
		c.Endpoint = n.addr
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		capy, err := c.Capacity(cctx)
		cancel()
		if err == nil {
			return capy, nil
		}
		last = err
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
	return nil, fmt.Errorf("scx_tt of %s not ready after %v: %v", n.name, limit, last)
}

// tail returns the last k lines of the node's log.
func (n *scxNode) tail(k int) string {
	f, err := os.Open(n.log)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > k {
			lines = lines[1:]
		}
	}
	return "  | " + strings.Join(lines, "\n  | ")
}
