//! Execution permits handed out fairly between lanes (a provider's account,
//! or the provider): when a permit frees, it goes to the lane whose turn it
//! is, round robin, not to whichever poll asked first. A node holding a
//! thousand of one merchant's backlogged polls (claimed ahead, waiting for
//! a permit) then runs another merchant's fresh poll next, not after the
//! thousand. Fair claiming ([`finality_store::PollQueue::claim`]) decides
//! which polls a node holds; this decides the order they run in.
//!
//! Written here because tokio's `Semaphore` is first-come first-served by
//! design and no maintained crate keys its waiters by group.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

#[derive(Default)]
struct State {
    free: usize,
    /// Waiters per lane, oldest first.
    waiting: HashMap<String, VecDeque<oneshot::Sender<()>>>,
    /// Lanes with waiters, in turn order.
    turns: VecDeque<String>,
}

/// `n` permits shared round robin between lanes.
pub(crate) struct FairPermits {
    state: Mutex<State>,
}

/// Held while a provider call is in flight; given back when dropped.
pub(crate) struct Permit {
    owner: Arc<FairPermits>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.owner.release();
    }
}

impl FairPermits {
    pub(crate) fn new(n: usize) -> Arc<Self> {
        Arc::new(FairPermits {
            state: Mutex::new(State {
                free: n,
                ..State::default()
            }),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A permit for a poll of `lane`: at once when one is free and no one
    /// waits, else at the lane's turn.
    pub(crate) async fn acquire(self: &Arc<Self>, lane: &str) -> Permit {
        let rx = {
            let mut s = self.lock();
            if s.free > 0 && s.turns.is_empty() {
                s.free -= 1;
                return Permit {
                    owner: self.clone(),
                };
            }
            let (tx, rx) = oneshot::channel();
            let queue = s.waiting.entry(lane.to_string()).or_default();
            queue.push_back(tx);
            if queue.len() == 1 {
                s.turns.push_back(lane.to_string());
            }
            rx
        };
        // The sender is only dropped with a permit handed over (`Ok`) or by
        // `release` skipping a waiter that went away, which is not this one.
        let _ = rx.await;
        Permit {
            owner: self.clone(),
        }
    }

    /// Hand a freed permit to the next lane in turn (skipping waiters that
    /// went away), or keep it free.
    fn release(&self) {
        let mut s = self.lock();
        while let Some(lane) = s.turns.pop_front() {
            let Some(queue) = s.waiting.get_mut(&lane) else {
                continue;
            };
            let next = queue.pop_front();
            if queue.is_empty() {
                s.waiting.remove(&lane);
            } else {
                s.turns.push_back(lane);
            }
            if let Some(tx) = next {
                if tx.send(()).is_ok() {
                    return;
                }
            }
        }
        s.free += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One lane's many waiters do not keep another lane's one waiter from
    /// the next permit.
    #[tokio::test]
    async fn a_freed_permit_goes_to_the_next_lane_in_turn() {
        let p = FairPermits::new(1);
        let held = p.acquire("big").await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (i, lane) in ["big", "big", "big", "small"].into_iter().enumerate() {
            let (p, order) = (p.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let _permit = p.acquire(lane).await;
                order.lock().unwrap().push(format!("{lane}{i}"));
            }));
            tokio::task::yield_now().await;
        }
        drop(held);
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(
            *order.lock().unwrap(),
            vec!["big0", "small3", "big1", "big2"]
        );
        // Every permit came back.
        assert_eq!(p.lock().free, 1);
    }
}
