/**
 * Search of the transactions a credential reaches, newest first by creation time, then
 * id (ids named by their pair in local mode are not time-ordered). The store filters by
 * account, terminal, external id and state; result and creation time are checked here
 * as rows are read, a bounded number of rows per request, so a rare match costs a few
 * more pages rather than an unbounded scan. The cursor is the id of the last row read;
 * the store places it in that order.
 */
import type { TransactionSearchRequest } from '../../protocol/index.js';
import type { Principal } from '../accounts/principal.js';
import type { TransactionRecord } from '../store/records.js';
import type { Store } from '../store/store.js';

export const SEARCH_DEFAULT_LIMIT = 50;
/** Rows read per store query, and at most this many queries per request. */
const SCAN_PAGE = 100;
const SCAN_PAGES = 10;

export async function searchTransactions(
  store: Store,
  principal: Principal,
  request: TransactionSearchRequest,
): Promise<{ records: TransactionRecord[]; nextCursor?: string }> {
  if (principal.terminalId && request.terminal_id && request.terminal_id !== principal.terminalId) {
    return { records: [] };
  }
  const terminalId = principal.terminalId ?? request.terminal_id;
  const limit = request.limit ?? SEARCH_DEFAULT_LIMIT;
  const from = request.created_from ? Date.parse(request.created_from) : undefined;
  const to = request.created_to ? Date.parse(request.created_to) : undefined;
  const matches = (record: TransactionRecord) => {
    const created = Date.parse(record.txn.created_at);
    return (
      (!request.result_code || record.txn.result_code === request.result_code) &&
      (from === undefined || created >= from) &&
      (to === undefined || created < to)
    );
  };
  const records: TransactionRecord[] = [];
  let cursor = request.cursor;
  for (let page = 0; page < SCAN_PAGES; page++) {
    const rows = await store.searchTransactions({
      accountId: principal.accountId,
      ...(terminalId ? { terminalId } : {}),
      ...(request.external_id ? { externalId: request.external_id } : {}),
      ...(request.state ? { state: request.state } : {}),
      ...(cursor ? { beforeId: cursor } : {}),
      limit: SCAN_PAGE,
    });
    for (const row of rows) {
      cursor = row.txn.id;
      if (!matches(row)) continue;
      records.push(row);
      if (records.length === limit) return { records, nextCursor: cursor };
    }
    if (rows.length < SCAN_PAGE) return { records };
  }
  return { records, ...(cursor ? { nextCursor: cursor } : {}) };
}
