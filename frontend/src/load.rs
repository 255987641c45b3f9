//! Data loading for every page through one type-erased `LocalResource`, so
//! the bundle carries Leptos's async machinery once rather than once per
//! page's data type (about 4 KB of code each).

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::rc::Rc;

use leptos::prelude::*;

type Erased = Rc<dyn Any>;
type Fetch = Rc<dyn Fn() -> Pin<Box<dyn Future<Output = Erased>>>>;

/// A `LocalResource<T>` in all but its type: reruns `fetch` when a signal it
/// reads (before its first await) changes.
pub struct Load<T> {
    inner: LocalResource<Erased>,
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for Load<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Load<T> {}

impl<T: Clone + 'static> Load<T> {
    pub fn new<Fut>(fetch: impl Fn() -> Fut + 'static) -> Self
    where
        Fut: Future<Output = T> + 'static,
    {
        let fetch: Fetch = Rc::new(move || {
            let fut = fetch();
            Box::pin(async move { Rc::new(fut.await) as Erased })
        });
        Self { inner: erased(fetch), _t: PhantomData }
    }

    /// The data, once loaded; inside a `Suspend`, as awaiting a resource is.
    pub async fn get(self) -> T {
        let value = self.inner.await;
        // Only `new` fills `inner`, always with a `T`.
        value.downcast_ref::<T>().cloned().expect("a Load holds the type it was made with")
    }
}

#[inline(never)]
fn erased(fetch: Fetch) -> LocalResource<Erased> {
    LocalResource::new(move || fetch())
}
