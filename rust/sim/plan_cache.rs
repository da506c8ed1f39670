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

    /// [`PlanCache::for_number`], or with `approx` the plan approximated (cached apart).
    pub fn for_number_approx<N: Any, T: Approximable + Any + Send + Sync>(&self, approx: bool, build: impl FnOnce() -> SimResult<T>) -> SimResult<Arc<T>> {
        if approx {
            self.for_number::<N, _>(|| Ok(Approximate(Arc::new(build()?.approximate())))).map(|a| a.0.clone())
        } else {
            self.for_number::<N, _>(build)
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

/// A plan that can swap tanh and σ for their approximations (`approx_activations=True`).
pub trait Approximable: Sized {
    fn approximate(self) -> Self;
}

/// The cache entry of an approximated plan: a type of its own, so it sits beside the plan
/// of the default activations.
struct Approximate<T>(Arc<T>);

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

    #[test]
    fn approximated_plans_are_cached_apart() {
        #[derive(Debug, PartialEq)]
        struct P(u32);
        impl Approximable for P {
            fn approximate(self) -> Self {
                P(self.0 + 100)
            }
        }
        let c = PlanCache::default();
        let mut built = 0;
        for _ in 0..2 {
            assert_eq!(*c.for_number_approx::<f32, _>(false, || { built += 1; Ok(P(1)) }).unwrap(), P(1));
            assert_eq!(*c.for_number_approx::<f32, _>(true, || { built += 1; Ok(P(1)) }).unwrap(), P(101));
        }
        assert_eq!(built, 2);
    }
}
