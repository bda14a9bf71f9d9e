//! The lanes slices are stacked on where they overlap (the trace exports' extra tracks, the HTML
//! timeline's rows): per lane one value, its "top", and the two questions greedy stacking asks of
//! them — the first lane whose top is at most `x`, and the first whose top is at least `x` — in
//! O(log lanes) each, where scanning the lanes made a run of slices that all overlap quadratic
//! (40 000 overlapping NVTX ranges: seconds in `greedy_lanes`; the HTML's rows likewise).

/// Per lane a top (`u64::MAX` for a lane with none), in a tree of (min, max) over the lanes that
/// grows as lanes are added.
pub struct LaneTops {
    /// Leaves from `cap`; node `i`'s children are `2i` and `2i + 1`.
    min: Vec<u64>,
    max: Vec<u64>,
    cap: usize,
    lanes: usize,
}

impl Default for LaneTops {
    fn default() -> Self {
        LaneTops::with_capacity(16)
    }
}

impl LaneTops {
    fn with_capacity(cap: usize) -> LaneTops {
        let cap = cap.next_power_of_two();
        // Unused leaves: never found by either question (min: MAX is above every `x` asked;
        // max: 0 is below every `x` asked but 0, and `first_at_least(0)` finds a real lane first).
        LaneTops {
            min: vec![u64::MAX; 2 * cap],
            max: vec![0; 2 * cap],
            cap,
            lanes: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.lanes
    }

    pub fn is_empty(&self) -> bool {
        self.lanes == 0
    }

    /// Adds a lane with top `v`; returns its index.
    pub fn push(&mut self, v: u64) -> usize {
        if self.lanes == self.cap {
            let mut bigger = LaneTops::with_capacity(2 * self.cap);
            for l in 0..self.lanes {
                bigger.push(self.min[self.cap + l]);
            }
            *self = bigger;
        }
        self.lanes += 1;
        self.set(self.lanes - 1, v);
        self.lanes - 1
    }

    pub fn get(&self, lane: usize) -> u64 {
        self.min[self.cap + lane]
    }

    pub fn set(&mut self, lane: usize, v: u64) {
        let mut i = self.cap + lane;
        self.min[i] = v;
        self.max[i] = v;
        while i > 1 {
            i /= 2;
            self.min[i] = self.min[2 * i].min(self.min[2 * i + 1]);
            self.max[i] = self.max[2 * i].max(self.max[2 * i + 1]);
        }
    }

    /// The first lane whose top is at most `x`.
    pub fn first_at_most(&self, x: u64) -> Option<usize> {
        self.first(&self.min, |v| v <= x)
    }

    /// The first lane whose top is at least `x`.
    pub fn first_at_least(&self, x: u64) -> Option<usize> {
        self.first(&self.max, |v| v >= x)
    }

    /// The first lane whose leaf in `tree` (`min` or `max`) passes `ok`, found from the root down:
    /// `ok` of a node's value says whether any leaf under it passes.
    fn first(&self, tree: &[u64], ok: impl Fn(u64) -> bool) -> Option<usize> {
        if self.lanes == 0 || !ok(tree[1]) {
            return None;
        }
        let mut i = 1;
        while i < self.cap {
            i = if ok(tree[2 * i]) { 2 * i } else { 2 * i + 1 };
        }
        Some(i - self.cap).filter(|&l| l < self.lanes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both questions answer as a scan of the lanes does, through growth and changes.
    #[test]
    fn the_first_lane_is_the_scans() {
        let mut t = LaneTops::default();
        let mut plain: Vec<u64> = Vec::new();
        let mut x = 12345u64;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        for step in 0..5000 {
            let r = next();
            if plain.is_empty() || r % 3 == 0 {
                let v = if r % 7 == 0 { u64::MAX } else { next() % 1000 };
                assert_eq!(t.push(v), plain.len());
                plain.push(v);
            } else {
                let l = (next() as usize) % plain.len();
                let v = next() % 1000;
                t.set(l, v);
                plain[l] = v;
            }
            let q = next() % 1100;
            assert_eq!(
                t.first_at_most(q),
                plain.iter().position(|&v| v <= q),
                "{step}"
            );
            assert_eq!(
                t.first_at_least(q),
                plain.iter().position(|&v| v >= q),
                "{step}"
            );
            assert_eq!(t.get(plain.len() - 1), plain[plain.len() - 1]);
        }
        assert_eq!(t.len(), plain.len());
        assert_eq!(t.first_at_least(0), Some(0));
    }
}
