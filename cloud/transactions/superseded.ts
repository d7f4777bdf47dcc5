/**
 * Which unacknowledged commands need not be sent again after a restart (or another
 * relay's death): a start or continue whose transaction has moved past PROCESSING has
 * done its work, and only its acknowledgement was lost in a crash. Sending it again would
 * only replay it. The outbox marks such a command delivered instead.
 */
import type { TerminalCommand } from '../../protocol/index.js';
import type { Store } from '../store/store.js';

export function supersededCommands(store: Pick<Store, 'getTransactionById'>) {
  return async (command: TerminalCommand): Promise<boolean> => {
    if (command.type !== 'transaction.start' && command.type !== 'transaction.continue') {
      return false;
    }
    const record = await store.getTransactionById(command.transaction_id);
    return record?.txn.state !== 'PROCESSING';
  };
}
