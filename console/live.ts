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
const connectionListeners = new Set<(online: boolean) => void>();
let reachable = true;

export function onEvent(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Hears each change of whether the feed reaches the relay; answers how to stop. */
export function onConnection(listener: (online: boolean) => void): () => void {
  connectionListeners.add(listener);
  return () => connectionListeners.delete(listener);
}

/**
 * Whether the console reaches the relay now. While it does not, what it shows of the
 * terminals is the last it heard, and no one can tell whether they are still online.
 */
export const relayReachable = () => reachable;

function connected(online: boolean): void {
  if (online === reachable) return;
  reachable = online;
  for (const listener of connectionListeners) listener(online);
}

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
      connected(true);
      for (const event of page.events) {
        recentEvents.push(event);
        if (recentEvents.length > RECENT_KEPT) recentEvents.shift();
        for (const listener of listeners) listener(event);
      }
    } catch (error) {
      if (signal.aborted) return;
      // Signed out, or a role with no events to read (the operator): nothing to follow.
      if (error instanceof ApiFailure && (error.status === 401 || error.status === 403)) return;
      // A token the relay no longer knows (410) starts again from the present.
      if (error instanceof ApiFailure && error.status === 410) token = undefined;
      failed = true;
      connected(false);
      await new Promise((resolve) => setTimeout(resolve, pauseMs));
      pauseMs = Math.min(pauseMs * 2, 5000);
    }
  }
}
