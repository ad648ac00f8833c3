//! Services a component needs at run time (tool settings, say), carried by the run
//! context without the engine knowing their types: the CLI puts them in, the component
//! that needs one takes it out by type.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;

/// Values keyed by their type; cheap to clone (each value is shared).
#[derive(Clone, Default)]
pub struct Services(HashMap<TypeId, Arc<dyn Any + Send + Sync>>);

impl Services {
    /// No services: components fall back to their defaults.
    pub fn new() -> Services {
        Services::default()
    }

    /// These services plus `value` (replacing one of the same type).
    pub fn with<T: Any + Send + Sync>(mut self, value: Arc<T>) -> Services {
        self.insert(value);
        self
    }

    /// Add `value`, replacing one of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: Arc<T>) {
        self.0.insert(TypeId::of::<T>(), value);
    }

    /// The service of type `T`, if one was given.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.0.get(&TypeId::of::<T>())?.downcast_ref::<T>()
    }
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Services({} values)", self.0.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_service_is_found_by_its_type_and_replaced_by_one_of_the_same_type() {
        let s = Services::new()
            .with(Arc::new(3u32))
            .with(Arc::new("a".to_string()));
        assert_eq!(s.get::<u32>(), Some(&3));
        assert_eq!(s.get::<String>().map(String::as_str), Some("a"));
        assert_eq!(s.get::<u64>(), None);
        let s = s.with(Arc::new(4u32));
        assert_eq!(s.get::<u32>(), Some(&4));
    }
}
