/* SPDX-License-Identifier: GPL-2.0 */
/* ABI shared by src/bpf/tt_sched.bpf.c and Rust (bindgen). Placeholder until the enforcement issue. */
#ifndef __TT_INTF_H
#define __TT_INTF_H

#define TT_MAX_CPUS 256

#endif
