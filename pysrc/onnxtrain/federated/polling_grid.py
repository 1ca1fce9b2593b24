"""A Grid that waits for replies polling every half second: Flower's HTTP grid polls every 3 s, which on a small
federation is most of a round's wait.  It wraps the grid flwr-serverapp gives and uses only its public methods;
after each push it tells ``pushed(node_ids)`` (the federation server, whose page nodes then pull at once) and
after each pull that brought replies ``pulled(node_ids)`` (a page's node that is closing may go offline now)."""
from __future__ import annotations

import time

from flwr.serverapp import Grid

POLL_SECONDS = 0.5


class PollingGrid(Grid):
    def __init__(self, grid: Grid, poll: float = POLL_SECONDS, pushed=None, pulled=None):
        self.grid, self.poll, self.pushed, self.pulled = grid, poll, pushed, pulled

    def set_run(self, run) -> None:
        self.grid.set_run(run)

    @property
    def run(self):
        return self.grid.run

    def create_message(self, *args, **kwargs):
        return self.grid.create_message(*args, **kwargs)

    def get_node_ids(self):
        return self.grid.get_node_ids()

    def get_nodes(self):
        return self.grid.get_nodes()

    def push_messages(self, messages):
        messages = list(messages)
        ids = list(self.grid.push_messages(messages))
        if self.pushed is not None and messages:
            self.pushed(sorted({m.metadata.dst_node_id for m in messages}))
        return ids

    def pull_messages(self, message_ids):
        got = list(self.grid.pull_messages(message_ids))
        if self.pulled is not None and got:
            self.pulled(sorted({m.metadata.src_node_id for m in got}))
        return got

    def send_and_receive(self, messages, *, timeout=None):
        """Push ``messages`` and pull their replies until all came or ``timeout`` seconds passed."""
        waiting = set(self.push_messages(messages))
        end = time.time() + (timeout or 0.0)
        replies = []
        while waiting and (timeout is None or time.time() < end):
            got = self.pull_messages(waiting)
            replies.extend(got)
            waiting.difference_update(m.metadata.reply_to_message_id for m in got)
            if waiting:
                time.sleep(self.poll)
        return replies
