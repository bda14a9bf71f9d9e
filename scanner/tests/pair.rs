//! Call nesting: parents are found per thread, by depth and time containment, and hostile depths
//! cost linear time.

use causeway_ring::{Class, Entry, Kind};
use causeway_scanner::read::pair::{Nesting, Tag};

fn parents(e: &[Entry]) -> Vec<Option<usize>> {
    let mut out = vec![None; e.len()];
    Nesting::visiting(e.into(), |_| None, |i, _, p| out[i] = p);
    out
}

fn call(seq: u64, tid: u32, depth: u16, t0: u64, t1: u64) -> Entry {
    Entry {
        seq,
        done: t1 != 0,
        t_begin: t0,
        t_end: t1,
        tid,
        api: 1,
        kind: Some(Kind::Call),
        flags: 0,
        result: 0,
        depth,
        node: 0,
        a0: 0,
        a1: 0,
        a2: 0,
    }
}

#[test]
fn nested_chain_and_siblings() {
    let e = vec![
        call(0, 1, 0, 0, 100),   // 0: outer
        call(1, 1, 1, 10, 40),   // 1: child of 0
        call(2, 1, 2, 20, 30),   // 2: child of 1
        call(3, 1, 1, 50, 90),   // 3: second child of 0
        call(4, 1, 0, 200, 0),   // 4: open outer
        call(5, 1, 1, 210, 220), // 5: child of the open call
    ];
    assert_eq!(
        parents(&e),
        vec![None, Some(0), Some(1), Some(0), None, Some(4)]
    );
}

#[test]
fn threads_do_not_mix() {
    // Thread 2's depth-1 call overlaps thread 1's depth-0 call in time; interleaved in seq order.
    let e = vec![
        call(0, 1, 0, 0, 100),
        call(1, 2, 1, 10, 20),
        call(2, 1, 1, 30, 40),
    ];
    assert_eq!(parents(&e), vec![None, None, Some(0)]);
}

#[test]
fn lost_parent_is_not_invented() {
    let e = vec![
        call(0, 1, 0, 0, 100),   // returned at 100
        call(1, 1, 1, 150, 160), // its parent (begun ~140) was dropped
        call(2, 1, 2, 10, 20),   // depth 2 with no depth-1 before it on the chain
    ];
    let p = parents(&e);
    assert_eq!(p[1], None);
    // Entry 2 is younger in seq but older in time than entry 1: not contained, no parent.
    assert_eq!(p[2], None);
}

#[test]
fn non_calls_are_ignored() {
    let mut mark = call(1, 1, 1, 10, 10);
    mark.kind = Some(Kind::Mark);
    let e = vec![call(0, 1, 0, 0, 100), mark, call(2, 1, 1, 20, 30)];
    assert_eq!(parents(&e), vec![None, None, Some(0)]);
}

#[test]
fn hostile_depths_are_linear() {
    // Alternating depths 65535 and 0 over many entries: a depth-indexed table would be quadratic.
    let e: Vec<Entry> = (0..200_000u64)
        .map(|i| call(i, 7, if i % 2 == 0 { u16::MAX } else { 0 }, i, i + 1))
        .collect();
    let t = std::time::Instant::now();
    let p = parents(&e);
    assert!(p.iter().all(Option::is_none));
    assert!(t.elapsed().as_secs() < 5);
    // A real chain 0..=65535 deep nests fully.
    let e: Vec<Entry> = (0..=u16::MAX as u64)
        .map(|d| call(d, 1, d as u16, d, 1_000_000 - d))
        .collect();
    let p = parents(&e);
    assert!(p.iter().enumerate().skip(1).all(|(i, &x)| x == Some(i - 1)));
}

#[test]
fn same_class_child_is_the_first_direct_child_of_the_same_class() {
    // api 1 = launch, api 2 = a query: a runtime launch holding a query and then two driver launches.
    let class = |e: &Entry| match e.api {
        1 => Some(Class::Launch),
        2 => Some(Class::Query),
        _ => None,
    };
    let mut e = vec![
        call(0, 1, 0, 0, 100), // 0: runtime launch
        call(1, 1, 1, 10, 20), // 1: a query inside it
        call(2, 1, 1, 30, 40), // 2: the driver launch: the same operation one layer down
        call(3, 1, 1, 50, 60), // 3: a second launch: not the first
        call(4, 1, 2, 52, 58), // 4: a launch two layers down: a child of 3, not of 0
        call(5, 2, 1, 10, 20), // 5: another thread: never a child of 0
    ];
    e[1].api = 2;
    let mut parent = vec![None; e.len()];
    let n = Nesting::visiting((&e).into(), class, |i, _, p| parent[i] = p);
    let child: Vec<_> = (0..e.len()).map(|i| n.child(i)).collect();
    assert_eq!(child, vec![Some(2), None, None, Some(4), None, None]);
    assert_eq!(parent[5], None);
    assert_eq!(n.child(99), None);
}

#[test]
fn threads_whose_ids_collide_in_the_lookup_table_do_not_mix() {
    // Thread ids 1, 65 and 129 share a slot of the nesting's small lookup table (64 entries): each
    // keeps its own chain of open calls however they interleave.
    let mut e = Vec::new();
    let tids = [1u32, 65, 129];
    for (k, &tid) in tids.iter().enumerate() {
        let t = 100 * k as u64;
        e.push(call(e.len() as u64, tid, 0, t, t + 1000));
    }
    for (k, &tid) in tids.iter().enumerate() {
        let t = 100 * k as u64 + 10;
        e.push(call(e.len() as u64, tid, 1, t, t + 20));
    }
    assert_eq!(
        parents(&e),
        vec![None, None, None, Some(0), Some(1), Some(2)]
    );
}

/// A same-class child a few entries on, and one hundreds of entries on (other threads' calls in
/// between), are both found, either side of the distance the nesting keeps in a byte; calls of
/// another class or thread are nobody's child.
#[test]
fn children_near_and_far_are_found() {
    const LAUNCH: u16 = 1;
    const OTHER: u16 = 2;
    let class = |e: &Entry| match e.api {
        LAUNCH => Some(Class::Launch),
        OTHER => Some(Class::Other),
        _ => None,
    };
    let other = |seq, tid, t0, t1| Entry {
        api: OTHER,
        ..call(seq, tid, 0, t0, t1)
    };
    let mut v = vec![call(0, 1, 0, 10, 100), call(1, 1, 1, 20, 90)];
    // A far pair: the parent, 300 calls of thread 2, then the child.
    v.push(call(2, 1, 0, 200, 10_000));
    for k in 0..300 {
        v.push(other(3 + k, 2, 201 + k, 202 + k));
    }
    v.push(call(303, 1, 1, 600, 9_000));
    // Exactly 254 and 255 entries apart: the last distance kept in the byte, and the first not.
    for gap in [254u64, 255] {
        let p = v.len() as u64;
        v.push(call(p, 1, 0, 20_000 + p, 90_000 + p));
        for k in 1..gap {
            v.push(other(p + k, 3, 20_001 + p + k, 20_002 + p + k));
        }
        v.push(call(p + gap, 1, 1, 20_100 + p, 80_000 + p));
    }
    let n = Nesting::of(&v, class);
    assert_eq!(n.child(0), Some(1));
    assert_eq!(n.child(2), Some(303));
    assert_eq!(n.child(304), Some(304 + 254));
    assert_eq!(n.child(304 + 254 + 1), Some(304 + 254 + 1 + 255));
    for i in [1, 3, 302, 303, v.len() - 1, v.len()] {
        assert_eq!(n.child(i), None, "entry {i}");
    }
    let launch = |outermost| Tag::Call {
        class: Class::Launch,
        outermost,
    };
    assert_eq!(n.tag(2), launch(true));
    assert_eq!(n.tag(303), launch(false));
    assert_eq!(n.tag(v.len() - 1), launch(false));
}
