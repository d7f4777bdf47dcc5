export * from './fields.js';
export * from './transaction.js';
export * from './terminal-status.js';
export * from './errors.js';
export * from './api.js';
export * from './terminal-link.js';
export * from './secrets.js';
export * from './operations.js';
