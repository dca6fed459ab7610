// SPDX-License-Identifier: Apache-2.0
// rs.rs - fixture: a Rust method to demangle (legacy and v0 manglings).
pub mod engine {
    pub struct Motor { pub rpm: u64 }
    impl Motor {
        #[inline(never)]
        pub fn spin_up(&mut self, n: u64) -> u64 {
            for i in 0..n { self.rpm = self.rpm.wrapping_mul(31).wrapping_add(i); }
            self.rpm
        }
    }
    #[inline(never)]
    pub fn generic_work<T: Into<u64> + Copy>(v: T) -> u64 { let x: u64 = v.into(); x.wrapping_mul(3) }
}
fn main() {
    let mut m = engine::Motor { rpm: std::env::args().count() as u64 };
    let r = m.spin_up(1000) + engine::generic_work(7u32);
    println!("{}", r);
}
