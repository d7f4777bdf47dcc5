/**
 * The live feed: one long poll of /event/list from the present, its events handed to
 * whichever page listens. When the relay goes away (a restart), the poll is tried again
 * with a growing pause, from the same next_token, so nothing is missed or shown twice.
 */
import { ApiFailure, api, type CloudEventView } from './api.js';

type Listener = (event: CloudEventView) => void;
const listeners = new Set<Listener>();

/** The newest events the feed brought since sign-in, oldest first: a page opened later shows them. */
const RECENT_KEPT = 200;
const recentEvents: CloudEventView[] = [];

/** What the feed brought lately, oldest first (at most RECENT_KEPT). */
export const recent = (): readonly CloudEventView[] => recentEvents;
let running: AbortController | undefined;
let connectionListener: (online: boolean) => void = () => undefined;

export function onEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

export const onConnection = (listener: (online: boolean) => void) =>
  (connectionListener = listener);

export function startLive(): void {
  if (running) return;
  const controller = new AbortController();
  running = controller;
  void loop(controller.signal);
}

export function stopLive(): void {
  running?.abort();
  running = undefined;
  // Nothing of one sign-in is shown to the next.
  recentEvents.length = 0;
}

async function loop(signal: AbortSignal): Promise<void> {
  let token: string | undefined;
  let pauseMs = 500;
  let failed = false;
  while (!signal.aborted) {
    try {
      // After a failure, a short poll first: the page says it is live again at once.
      const wait_seconds = failed ? 0 : 20;
      const page = await api.events(
        token ? { next_token: token, wait_seconds } : { wait_seconds },
        signal,
      );
      token = page.next_token;
      pauseMs = 500;
      failed = false;
      connectionListener(true);
      for (const event of page.events) {
        recentEvents.push(event);
        if (recentEvents.length > RECENT_KEPT) recentEvents.shift();
        for (const listener of listeners) listener(event);
      }
    } catch (error) {
      if (signal.aborted) return;
      if (error instanceof ApiFailure && error.status === 401) return;
      // A token the relay no longer knows (410) starts again from the present.
      if (error instanceof ApiFailure && error.status === 410) token = undefined;
      failed = true;
      connectionListener(false);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      pauseMs = Math.min(pauseMs * 2, 5000);
    }
  }
}
