//! `admit` of class adaptive (issue 17, item 1): no timing, a managed CPU, bounds within their
//! rules; it joins the slack of its CPU at once (BPF: a be task there), the planner untouched.
//! Every refusal names the field, the value and the rule, and changes nothing.

use super::admit::snapshot;
use super::*;
use crate::adaptive::AdaptiveBounds;
use crate::control::request::{Admit, AdmitClass, AdmitSelector};

fn adaptive(cpu: Option<u32>) -> Admit {
    Admit {
        class: AdmitClass::Adaptive,
        cpu,
        ..Admit::new("legacy", AdmitSelector::Pid(900))
    }
}

#[test]
fn an_adaptive_task_joins_the_slack_of_its_cpu_and_refusals_change_nothing() {
    let (mut c, e) = planner_run(3, at(3));
    let mut e = e.with_threads(&Selector::Pid(900), &[900, 901]);
    Engine::with_planner(&mut e, |_, _| ()).expect("planner");
    let planner_before = e.planner.as_ref().map(|p| p.fingerprint());
    let before = snapshot(&mut c, &mut e);
    let refused = |r: Admit| Request::Admit(r);
    let mut timed = adaptive(Some(1));
    timed.period_slots = Some(8);
    timed.wcet_slots = Some(1);
    let spread = AdaptiveBounds {
        spread: Some(20.0),
        ..Default::default()
    };
    let short = AdaptiveBounds {
        period_min_us: Some(5_000),
        ..Default::default()
    };
    let mut be_with_bounds = adaptive(Some(1));
    be_with_bounds.class = AdmitClass::Be;
    be_with_bounds.adaptive = Some(Box::new(spread.clone()));
    let cases = [
        (
            adaptive(None),
            "cpu = null: is required for an adaptive task (the CPU of its reservation)",
        ),
        (
            adaptive(Some(0)),
            "cpu = 0: must be a managed CPU of the plan ([1])",
        ),
        (
            timed,
            "class = \"adaptive\": an adaptive task takes no timing (period_slots, wcet_slots, \
             offset_slots, deadline_slots, after, util, latency_us): its period and budget are \
             inferred at run time; bound them with adaptive",
        ),
        (
            Admit {
                adaptive: Some(Box::new(spread)),
                ..adaptive(Some(1))
            },
            "adaptive.spread = 20: must be in [0, 10]",
        ),
        (
            Admit {
                adaptive: Some(Box::new(short)),
                ..adaptive(Some(1))
            },
            "adaptive.period_min_us = 5000: must be at least slot_us (10000): a reservation \
             period is at least one slot",
        ),
        (
            be_with_bounds,
            "adaptive = {\"spread\":20.0}: is only for class adaptive",
        ),
    ];
    for (r, want) in cases {
        let got = error(e.send(&mut c, &refused(r)));
        assert!(got.ends_with(want), "got {got:?}\nwant {want:?}");
    }
    assert_eq!(snapshot(&mut c, &mut e), before);
    // accepted: BPF gets it on CPU 1 as class adaptive (a be task there until a reservation)
    let line = e.send(&mut c, &Request::Admit(adaptive(Some(1)))).to_line();
    assert_eq!(
        line,
        "{\"ok\":true,\"accepted\":true,\"tasks\":[{\"task\":\"legacy\",\"class\":\"adaptive\",\
         \"cpu\":1,\"from_slot\":3,\"period_slots\":0,\"wcet_slots\":0,\"tids\":[900,901]}]}\n"
    );
    assert_eq!(e.added, vec![(1, vec![900, 901])]);
    assert_eq!(e.classes, vec![crate::plan::Class::Adaptive]);
    assert_eq!(e.planner.as_ref().map(|p| p.fingerprint()), planner_before);
    let added = c.take_added();
    assert_eq!(
        (added[0].class, added[0].cpu),
        (crate::plan::Class::Adaptive, Some(1))
    );
    // the journal keeps the request, bounds and all
    let r = Admit {
        adaptive: Some(Box::new(AdaptiveBounds {
            spread: Some(0.3),
            ..Default::default()
        })),
        ..adaptive(Some(1))
    };
    assert_eq!(
        line_of(&Request::Admit(r.clone())),
        "{\"op\":\"admit\",\"name\":\"legacy\",\"select\":{\"pid\":900},\"class\":\"adaptive\",\
         \"cpu\":1,\"adaptive\":{\"spread\":0.3}}\n"
    );
    assert_eq!(
        Request::parse(line_of(&Request::Admit(r.clone())).trim_end()),
        Ok(Request::Admit(r))
    );
}

#[test]
fn without_a_planner_an_adaptive_admit_is_refused() {
    let mut c = control();
    let mut e = FakeEngine::at(at(3)).with_threads(&Selector::Pid(900), &[900]);
    let got = error(e.send(&mut c, &Request::Admit(adaptive(Some(1)))));
    assert!(got.contains("only in planner mode"), "{got}");
    assert!(e.added.is_empty());
}

#[test]
fn an_admitted_adaptive_task_s_parameters_are_kept_and_remove_takes_its_reservation_out() {
    use crate::planner::kernel_path::{PeriodicOutcome, PeriodicTask};
    let (mut c, e) = planner_run(3, at(3));
    let mut e = e.with_threads(&Selector::Pid(900), &[900]);
    let r = Admit {
        adaptive: Some(Box::new(AdaptiveBounds {
            spread: Some(0.3),
            ..Default::default()
        })),
        ..adaptive(Some(1))
    };
    assert!(e
        .send(&mut c, &Request::Admit(r))
        .to_line()
        .contains("\"accepted\":true"));
    let index = c.added()[0].index;
    let p = c.adaptive_params(index).expect("its parameters");
    assert_eq!(p.controller.spread, 0.3);
    assert!(c.adaptive_params(index + 1).is_none());
    // the run's supervisor granted it 1 slot every 8 (CPU index 0)
    let granted = Engine::with_planner(&mut e, |p, _| {
        p.admit_task(&PeriodicTask::implicit(index, 0, 8, 1), "legacy")
    })
    .expect("planner");
    assert!(
        matches!(granted, PeriodicOutcome::Accepted { .. }),
        "{granted:?}"
    );
    let req = Request::Remove(crate::control::request::TaskArg {
        task: "legacy".into(),
    });
    assert!(e.send(&mut c, &req).to_line().contains("\"ok\":true"));
    // nothing left to take out: remove took the reservation with it
    let left = Engine::with_planner(&mut e, |p, _| p.remove_admitted(index)).expect("planner");
    assert!(!left);
}
