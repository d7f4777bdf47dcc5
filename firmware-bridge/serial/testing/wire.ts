/** Helpers shared by the serial link's tests: frames to wire bytes and back, synchronously. */
import { FrameDecoder, type FrameDecoderOptions } from '../decoder.js';
import { FrameEncoder } from '../encoder.js';
import type { Frame } from '../codec.js';

/** The bytes FrameEncoder writes for these frames (or raw packets), concatenated. */
export function toWire(...frames: (Frame | Buffer)[]): Buffer {
  const encoder = new FrameEncoder();
  const chunks: Buffer[] = [];
  for (const frame of frames) {
    encoder._transform(frame, 'binary', (error, data) => {
      if (error) throw error;
      chunks.push(data as Buffer);
    });
  }
  return Buffer.concat(chunks);
}

/** Feeds bytes to a fresh decoder (in the given chunk sizes) and returns what it made of them. */
export function decodeAll(
  bytes: Buffer,
  options: FrameDecoderOptions & { chunk?: number } = {},
): { frames: Frame[]; decoder: FrameDecoder } {
  const decoder = new FrameDecoder(options);
  const frames: Frame[] = [];
  decoder.on('data', (frame: Frame) => frames.push(frame));
  const step = options.chunk ?? bytes.length;
  for (let at = 0; at < bytes.length; at += step) {
    decoder._transform(bytes.subarray(at, at + step), 'binary', (error) => {
      if (error) throw error;
    });
  }
  return { frames, decoder };
}

export const json = (value: unknown): Buffer => Buffer.from(JSON.stringify(value), 'utf8');
