/* SPDX-License-Identifier: GPL-2.0 */
/* Placeholder until the enforcement issue lands: a global FIFO scheduler. */
#include <scx/common.bpf.h>
#include "intf.h"

char _license[] SEC("license") = "GPL";

UEI_DEFINE(uei);

void BPF_STRUCT_OPS(tt_enqueue, struct task_struct *p, u64 enq_flags)
{
	scx_bpf_dsq_insert(p, SCX_DSQ_GLOBAL, SCX_SLICE_DFL, enq_flags);
}

void BPF_STRUCT_OPS(tt_exit, struct scx_exit_info *ei)
{
	UEI_RECORD(uei, ei);
}

SCX_OPS_DEFINE(tt_ops,
	       .enqueue	= (void *)tt_enqueue,
	       .exit	= (void *)tt_exit,
	       .name	= "tt");
