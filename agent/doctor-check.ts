/** One line of `tps agent doctor`'s checklist. */
export type CheckStatus = 'ok' | 'warn' | 'fail';

export interface CheckResult {
  status: CheckStatus;
  title: string;
  detail?: string;
}
