/** The card-reader serial link: frames, the reliable link and the messages it carries. */
export * from './codec.js';
export { FrameEncoder } from './encoder.js';
export {
  FrameDecoder,
  type DecoderStats,
  type DropInfo,
  type FrameDecoderOptions,
} from './decoder.js';
export { SerialLinkError, type SerialLinkErrorCode } from './errors.js';
export {
  SerialLink,
  type Incoming,
  type LinkRole,
  type Outgoing,
  type SerialLinkEvents,
  type SerialLinkOptions,
  type SerialLinkStats,
} from './link.js';
export * from './messages.js';
export { ManualTimers, systemTimers, type LinkTimers } from './timers.js';
export {
  createStreamPair,
  seededRandom,
  type LineFaults,
  type LineStats,
  type StreamPair,
  type StreamPairOptions,
} from './stream-pair.js';
