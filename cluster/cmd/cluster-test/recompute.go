package main

// The test's own recomputation of what scx_tt reserves for a pod, written
// from the rule in docs/control.md ("Timing") and not from scx_tt's code:
// for utilisation U and latency bound L (microseconds), P is the longest
// period (in slots) dividing the frame such that Q = ceil(U*P) <= P and a
// vCPU never waits longer than L, 2*(P-Q)*slot_us <= L. The vCPU then holds
// Q slots of every P, that is Q*frame/P slots per frame, on its CPU. A CPU
// accepts as long as its reserved slots per frame stay <= frame.

import (
	"math"

	"scx-tt/cluster/nodeapi"
)

const (
	slotUS     = 10000 // 10 ms slots
	frameSlots = 120   // a frame of 1.2 s
)

// reservation returns the period P, budget Q and slots per frame of one
// vCPU of timing t; ok is false when no period fits (the node refuses the
// request with a 400 on latency_us).
func reservation(t nodeapi.Timing, frame, slot int64) (p, q, perFrame int64, ok bool) {
	for p = frame; p >= 1; p-- {
		if frame%p != 0 {
			continue
		}
		q = int64(math.Ceil(t.Util * float64(p)))
		if q <= p && 2*(p-q)*slot <= t.LatencyUS {
			return p, q, q * frame / p, true
		}
	}
	return 0, 0, 0, false
}

// fitsBySum tells whether vcpus vCPUs of perFrame slots each fit on
// distinct CPUs of a node whose CPUs hold reserved slots per frame
// (reserved[i] for CPU i), by the sum rule alone.
func fitsBySum(reserved []int64, vcpus int, perFrame, frame int64) bool {
	n := 0
	for _, r := range reserved {
		if r+perFrame <= frame {
			n++
		}
	}
	return n >= vcpus
}
