/**
 * Fields that hold secrets or card data. Loggers of every part redact them wherever they
 * appear (common/redact.ts); nothing else in a log may carry them.
 */
export const SECRET_FIELDS = [
  'authorization',
  'password',
  'secret',
  'secret_hash',
  'card_number_customer',
  'card_number_merchant',
  'card_token',
  'par_value',
  'contents',
] as const;
