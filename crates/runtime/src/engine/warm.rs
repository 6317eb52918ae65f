//! Instances kept warm between one business's requests (issue 38).
//!
//! A request used to get a fresh instance and a fresh store, and drop both
//! when it answered: instantiating, then resetting the memory the call
//! dirtied, was about a tenth of a contact read's CPU. An area component
//! keeps nothing between calls that matters (it is written to be
//! stateless: every answer comes from the request and the store), so an
//! instance that answered normally may answer the same business's next
//! request. Never another business's: what one tenant's call left in
//! linear memory stays with that tenant.
//!
//! An instance is put back only after a call that returned (a trap, a
//! deadline or a limit discards it), with no resource left in its table,
//! and at most `MAX_USES` times; at most `MAX_IDLE` wait in all (the oldest
//! goes first), so idle instances never take the pool's slots from work.
//! `Switches::warm_instances` off (`SWITCHBOARD_WARM_INSTANCES=0`) turns
//! reuse off (a fresh instance per call, as before): the side-by-side bench
//! uses it.
//!
//! Job steps keep the dispatcher's instances the same way, in a set of
//! their own (`Components::run_job`, `run_batch`): a step's instance may
//! run the same business's next step.

use super::bindings::ResourceArea;
use super::imports::RequestState;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;
use wasmtime::Store;

/// Calls one instance answers before it is dropped: bounds what a guest
/// allocator's fragmentation can grow to.
const MAX_USES: u32 = 10_000;
/// Idle instances kept in all, across components and businesses (a set's
/// default: `with_limit` sets another).
const MAX_IDLE: usize = 32;
/// Idle instances kept per (component, business).
const MAX_IDLE_PER_KEY: usize = 4;
/// Businesses one component's map keeps an entry for, emptied ones
/// included: `take` leaves an emptied list in place so the same business's
/// `put` finds it without allocating its key again; past this many, `put`
/// drops the empty ones before it adds a business (at most `MAX_IDLE` lists
/// hold instances, so that frees at least half).
const MAX_KEYS_PER_COMPONENT: usize = 2 * MAX_IDLE;

/// An instance that answered a call, with its store. `I` is the bindings'
/// handle on the instance (the async bench has bindings of its own).
pub(super) struct Warm<I = ResourceArea> {
    pub store: Store<RequestState>,
    pub instance: I,
    pub uses: u32,
    idle_since: Instant,
}

impl<I> Warm<I> {
    pub fn new(store: Store<RequestState>, instance: I, uses: u32) -> Warm<I> {
        Warm { store, instance, uses, idle_since: Instant::now() }
    }
}

/// Idle instances by component, then by business.
pub(super) struct WarmInstances<I = ResourceArea> {
    on: bool,
    /// Idle instances kept in all (at most `MAX_IDLE`).
    max_idle: usize,
    idle: Mutex<Idle<I>>,
}

struct Idle<I> {
    by_component: HashMap<String, HashMap<String, Vec<Warm<I>>>>,
    count: usize,
}

impl<I> Default for Idle<I> {
    fn default() -> Self {
        Idle { by_component: HashMap::new(), count: 0 }
    }
}

impl<I> WarmInstances<I> {
    /// Idle instances kept when `on`; none otherwise.
    pub fn new(on: bool) -> WarmInstances<I> {
        Self::with_limit(on, MAX_IDLE)
    }

    /// Like `new`, keeping at most `max_idle` (capped at `MAX_IDLE`).
    pub fn with_limit(on: bool, max_idle: usize) -> WarmInstances<I> {
        WarmInstances { on, max_idle: max_idle.min(MAX_IDLE), idle: Mutex::new(Idle::default()) }
    }

    /// An idle instance of `component` that last answered `business`.
    pub fn take(&self, component: &str, business: &str) -> Option<Warm<I>> {
        if !self.on || business.is_empty() {
            return None;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let by_business = idle.by_component.get_mut(component)?;
        // An emptied list stays, for this business's `put`.
        let warm = by_business.get_mut(business)?.pop()?;
        idle.count -= 1;
        Some(warm)
    }

    /// Keeps `warm` for `business`'s next call, if it may be reused.
    pub fn put(&self, component: &str, business: &str, mut warm: Warm<I>) {
        if !self.on || business.is_empty() || warm.uses >= MAX_USES || !warm.store.data().reusable() {
            return;
        }
        warm.idle_since = Instant::now();
        let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
        let held = idle.by_component.get(component).and_then(|b| b.get(business)).map_or(0, Vec::len);
        if held >= MAX_IDLE_PER_KEY {
            drop(idle);
            return;
        }
        let oldest = if idle.count >= self.max_idle { idle.remove_oldest() } else { None };
        // Keys are allocated only for a component or a business not seen
        // (or pruned) before: the common path finds both.
        if !idle.by_component.contains_key(component) {
            idle.by_component.insert(component.to_string(), HashMap::new());
        }
        let by_business = idle.by_component.get_mut(component).expect("inserted above");
        match by_business.get_mut(business) {
            Some(list) => list.push(warm),
            None => {
                if by_business.len() >= MAX_KEYS_PER_COMPONENT {
                    by_business.retain(|_, list| !list.is_empty());
                }
                by_business.insert(business.to_string(), vec![warm]);
            }
        }
        idle.count += 1;
        drop(idle);
        // Dropping a store resets its memory: outside the lock.
        drop(oldest);
    }

    /// Drops every idle instance (when the pool runs out of slots).
    pub fn clear(&self) -> usize {
        let drained = {
            let mut idle = self.idle.lock().unwrap_or_else(|e| e.into_inner());
            idle.count = 0;
            std::mem::take(&mut idle.by_component)
        };
        drained.values().flat_map(|b| b.values()).map(Vec::len).sum()
    }
}

impl<I> Idle<I> {
    fn remove_oldest(&mut self) -> Option<Warm<I>> {
        let (component, business, index) = self
            .by_component
            .iter()
            .flat_map(|(c, b)| b.iter().flat_map(move |(biz, list)| list.iter().enumerate().map(move |(i, w)| (w.idle_since, c, biz, i))))
            .min_by_key(|(since, ..)| *since)
            .map(|(_, c, b, i)| (c.clone(), b.clone(), i))?;
        let by_business = self.by_component.get_mut(&component)?;
        let list = by_business.get_mut(&business)?;
        let warm = list.remove(index);
        if list.is_empty() {
            by_business.remove(&business);
        }
        self.count -= 1;
        Some(warm)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// A reusable store with no instance in it (`Warm<()>`).
    struct Fixture {
        engine: wasmtime::Engine,
        caps: Arc<crate::engine::imports::Capabilities>,
    }

    impl Fixture {
        fn new() -> Fixture {
            let scratch = std::env::temp_dir().join(format!("switchboard-warm-{}", uuid::Uuid::new_v4()));
            std::fs::create_dir_all(&scratch).unwrap();
            let plugins = crate::plugins::Registry::start(None, &scratch, true).unwrap();
            let _ = std::fs::remove_dir_all(&scratch);
            let caps = crate::engine::imports::Capabilities { outbound: Default::default(), providers: crate::engine::providers::Providers::none(plugins), recording_links: None };
            Fixture { engine: wasmtime::Engine::default(), caps: Arc::new(caps) }
        }

        /// An idle instance of `business` (its state says whose it is).
        fn warm(&self, business: &str) -> Warm<()> {
            let state = RequestState::new(None, String::new(), business, self.caps.clone());
            Warm::new(Store::new(&self.engine, state), (), 0)
        }
    }

    fn on() -> WarmInstances<()> {
        WarmInstances::new(true)
    }

    fn keys(w: &WarmInstances<()>, component: &str) -> usize {
        w.idle.lock().unwrap().by_component.get(component).map_or(0, HashMap::len)
    }

    #[test]
    fn an_instance_goes_back_to_its_own_business_only() {
        let f = Fixture::new();
        let w = on();
        w.put("contacts", "a", f.warm("a"));
        assert!(w.take("contacts", "b").is_none());
        assert!(w.take("agents", "a").is_none());
        let got = w.take("contacts", "a").expect("a's instance");
        assert_eq!(got.store.data().business_id(), "a");
        // The emptied entry stays (no key allocated on the next put) and
        // hands out nothing.
        assert_eq!(keys(&w, "contacts"), 1);
        assert!(w.take("contacts", "a").is_none());
        w.put("contacts", "a", got);
        assert_eq!(keys(&w, "contacts"), 1);
        assert!(w.take("contacts", "b").is_none());
        assert_eq!(w.take("contacts", "a").unwrap().store.data().business_id(), "a");
    }

    #[test]
    fn emptied_entries_and_idle_instances_stay_bounded() {
        let f = Fixture::new();
        let w = on();
        // Many businesses, each taking back what it put: only emptied
        // entries pile up, and not past the bound.
        for n in 0..10 * MAX_KEYS_PER_COMPONENT {
            let business = format!("b{n}");
            w.put("contacts", &business, f.warm(&business));
            assert_eq!(w.take("contacts", &business).unwrap().store.data().business_id(), business);
            assert!(keys(&w, "contacts") <= MAX_KEYS_PER_COMPONENT);
        }
        // Many businesses leaving instances: at most MAX_IDLE wait, each
        // under its own business.
        for n in 0..10 * MAX_KEYS_PER_COMPONENT {
            let business = format!("c{n}");
            w.put("contacts", &business, f.warm(&business));
            let idle = w.idle.lock().unwrap();
            assert!(idle.count <= MAX_IDLE);
            assert_eq!(idle.count, idle.by_component.values().flat_map(|b| b.values()).map(Vec::len).sum::<usize>());
            drop(idle);
            assert!(keys(&w, "contacts") <= MAX_KEYS_PER_COMPONENT);
        }
        let kept: Vec<String> = w.idle.lock().unwrap().by_component["contacts"].iter().filter(|(_, l)| !l.is_empty()).map(|(k, _)| k.clone()).collect();
        assert_eq!(kept.len(), MAX_IDLE);
        for business in kept {
            assert_eq!(w.take("contacts", &business).unwrap().store.data().business_id(), business);
        }
        assert_eq!(w.idle.lock().unwrap().count, 0);
    }

    #[test]
    fn a_set_with_a_limit_keeps_that_many_the_newest() {
        let f = Fixture::new();
        let w = WarmInstances::<()>::with_limit(true, 3);
        for n in 0..5 {
            w.put("dispatcher", &format!("b{n}"), f.warm(&format!("b{n}")));
        }
        assert_eq!(w.idle.lock().unwrap().count, 3);
        assert!(w.take("dispatcher", "b0").is_none() && w.take("dispatcher", "b1").is_none(), "the oldest went first");
        for n in 2..5 {
            assert!(w.take("dispatcher", &format!("b{n}")).is_some());
        }
        assert_eq!(WarmInstances::<()>::with_limit(true, 1000).max_idle, MAX_IDLE);
    }
}
