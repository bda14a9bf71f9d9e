//! Giving a large model's memory back off the caller's path.

/// Drops `x` on a thread of its own. A 10 M-entry timeline is gigabytes of mappings, and giving
/// them back is work the answer does not need (when its names were reference-counted, a fifth of
/// `causeway why`). A command that exits next never waits for it; a long-lived caller (the Python
/// module) has the memory back shortly after. Where no thread can be started, `x` is dropped here.
pub fn drop_later<T: Send + 'static>(x: T) {
    // A failed spawn drops the closure, and `x` with it, before returning.
    let _ = std::thread::Builder::new()
        .name("causeway-drop".into())
        .spawn(move || drop(x));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_is_dropped() {
        let (tx, rx) = std::sync::mpsc::channel::<()>();
        struct Tell(std::sync::mpsc::Sender<()>);
        impl Drop for Tell {
            fn drop(&mut self) {
                let _ = self.0.send(());
            }
        }
        drop_later(Tell(tx));
        rx.recv_timeout(std::time::Duration::from_secs(10))
            .expect("dropped");
    }
}
