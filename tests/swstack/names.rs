// names.rs - a Rust program for swstack-names.test: a module, a generic
// type, functions inlined into others at opt-level 2, and a thread named
// names-worker blocked in pause(), main joining it.
use std::hint::black_box;

extern "C" {
    fn pause() -> i32;
}

mod boxes {
    pub struct Holder<T> {
        pub value: T,
    }

    impl<T: Copy + std::ops::Add<Output = T> + From<u8>> Holder<T> {
        #[inline(never)]
        pub fn wait(&self) -> T {
            unsafe {
                super::pause();
            }
            std::hint::black_box(self.value)
        }

        #[inline(always)]
        pub fn get(&self) -> T {
            self.wait() + T::from(1)
        }
    }
}

#[inline(always)]
fn twice(h: &boxes::Holder<u64>) -> u64 {
    h.get() * 2
}

#[inline(never)]
fn outer(h: &boxes::Holder<u64>) -> u64 {
    black_box(twice(h)) + 1
}

fn main() {
    let worker = std::thread::Builder::new()
        .name("names-worker".into())
        .spawn(|| {
            let h = boxes::Holder { value: black_box(3u64) };
            outer(&h)
        })
        .unwrap();
    println!("ready");
    let _ = worker.join();
}
