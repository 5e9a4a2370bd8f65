//! The region tables of the last few sets of fields an exchange moved, by the fields'
//! addresses. An exchange finds its set before every launch: among at most
//! [`TABLE_SETS`](super::TABLE_SETS) sets, comparing keys costs less than hashing them, and
//! the set found is named by its index until the next set is added or removed.

/// Sets of region tables (`T`) by key (the fields' addresses), in a list: a key is found by
/// comparing it with each.
pub(super) struct TableSets<T> {
    sets: Vec<(Vec<u64>, T)>,
}

impl<T> Default for TableSets<T> {
    fn default() -> Self {
        TableSets { sets: Vec::new() }
    }
}

impl<T> TableSets<T> {
    /// The index of the set of `key`, valid until a set is inserted or removed.
    pub(super) fn find(&self, key: &[u64]) -> Option<usize> {
        self.sets.iter().position(|(k, _)| k.as_slice() == key)
    }

    /// The set of `key`.
    pub(super) fn get(&self, key: &[u64]) -> Option<&T> {
        self.find(key).map(|i| &self.sets[i].1)
    }

    /// The set at `index` (from [`Self::find`] or [`Self::insert`]).
    pub(super) fn at(&self, index: usize) -> &T {
        &self.sets[index].1
    }

    /// The set at `index`, to change.
    pub(super) fn at_mut(&mut self, index: usize) -> &mut T {
        &mut self.sets[index].1
    }

    /// Adds the set of `key`, which must not be here yet; returns its index.
    pub(super) fn insert(&mut self, key: Vec<u64>, set: T) -> usize {
        debug_assert!(self.find(&key).is_none(), "a key inserted twice");
        self.sets.push((key, set));
        self.sets.len() - 1
    }

    /// Takes out the set at `index`; the last set takes its index.
    pub(super) fn remove(&mut self, index: usize) -> T {
        self.sets.swap_remove(index).1
    }

    /// The sets, by index.
    pub(super) fn iter(&self) -> impl Iterator<Item = &T> {
        self.sets.iter().map(|(_, set)| set)
    }

    pub(super) fn len(&self) -> usize {
        self.sets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_set_is_found_by_its_whole_key_and_keeps_its_index_until_one_is_removed() {
        let mut sets = TableSets::default();
        let empty = sets.insert(Vec::new(), "none");
        let a = sets.insert(vec![1, 2], "a");
        let b = sets.insert(vec![1, 2, 3], "b");
        assert_eq!(sets.find(&[]), Some(empty));
        assert_eq!(sets.find(&[1, 2]), Some(a));
        assert_eq!(sets.find(&[1, 2, 3]), Some(b));
        assert_eq!(sets.find(&[1]), None);
        assert_eq!(sets.find(&[2, 1]), None);
        assert_eq!((sets.at(a), sets.get(&[1, 2, 3])), (&"a", Some(&"b")));
        *sets.at_mut(a) = "a2";
        assert_eq!(sets.remove(empty), "none");
        // The last set moved into the freed index; the others kept theirs.
        assert_eq!(sets.find(&[1, 2, 3]), Some(empty));
        assert_eq!(sets.find(&[1, 2]), Some(a));
        assert_eq!(sets.get(&[1, 2]), Some(&"a2"));
        assert_eq!(sets.len(), 2);
        assert_eq!(sets.iter().count(), 2);
    }
}
