//! Plans kept with a network between calls: rounding and packing the weights is done once
//! per format, not on every run (a hidden-1024 network has a million weights to round).

use crate::error::SimResult;
use crate::num::custom_float::Custom;
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// One plan per plan type (e.g. `FloatPlan<f32>`). Only for plan types whose contents
/// depend on the network alone: a custom-format plan also depends on the format in scope,
/// so callers build those afresh.
#[derive(Default)]
pub struct PlanCache(Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>);

impl PlanCache {
    /// The plan of type `T` for number type `N`: cached, except when `N` is a custom format
    /// (its plan depends on the format in scope, so it is built afresh).
    pub fn for_number<N: Any, T: Any + Send + Sync>(&self, build: impl FnOnce() -> SimResult<T>) -> SimResult<Arc<T>> {
        if TypeId::of::<N>() == TypeId::of::<Custom>() {
            build().map(Arc::new)
        } else {
            self.get_or_build(build)
        }
    }

    /// The cached plan of type `T`, or `build()`'s (kept if it succeeds).
    pub fn get_or_build<T: Any + Send + Sync>(&self, build: impl FnOnce() -> SimResult<T>) -> SimResult<Arc<T>> {
        let key = TypeId::of::<T>();
        if let Some(p) = self.0.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(p.clone().downcast::<T>().expect("keyed by type"));
        }
        let plan = Arc::new(build()?);
        self.0.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_insert_with(|| plan.clone() as Arc<dyn Any + Send + Sync>);
        Ok(plan)
    }
}

/// The cache entry of a plan whose tanh and σ are the approximate ones
/// (`approx_activations=True`): a type of its own, so it sits beside the plan of the
/// default activations.
pub struct Approximate<T>(pub Arc<T>);

impl std::fmt::Debug for PlanCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PlanCache")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_once_per_type_and_not_on_failure() {
        let c = PlanCache::default();
        let mut built = 0;
        for _ in 0..3 {
            let v = c.get_or_build(|| { built += 1; Ok(7u32) }).unwrap();
            assert_eq!(*v, 7);
        }
        assert_eq!(built, 1);
        assert!(c.get_or_build::<u64>(|| Err(crate::error::SimError::Unsupported("no".into()))).is_err());
        assert_eq!(*c.get_or_build(|| Ok(9u64)).unwrap(), 9);
    }
}
