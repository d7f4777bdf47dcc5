/**
 * Secret redaction for log lines. Which fields are secret is the contract's statement
 * (protocol/secrets.ts); how to take them out of a line of JSON is here.
 */

const CENSORED = '"[redacted]"';

/** Where the JSON value starting at `start` ends (exclusive): a string, an object or array, or a literal. */
function valueEnd(json: string, start: number): number {
  let depth = 0;
  for (let i = start; i < json.length; i++) {
    const c = json[i];
    if (c === '"') {
      // Skip the string, escapes included.
      for (i++; i < json.length && json[i] !== '"'; i++) if (json[i] === '\\') i++;
      if (depth === 0) return i + 1;
    } else if (c === '{' || c === '[') {
      depth++;
    } else if (c === '}' || c === ']') {
      if (depth === 0) return i;
      if (--depth === 0) return i + 1;
    } else if (c === ',' && depth === 0) {
      return i;
    }
  }
  return json.length;
}

/**
 * A function that replaces, in a line of JSON, the value of every member named in `fields`,
 * at any depth and of any type, with "[redacted]". Loggers run it on each line they write
 * (pino's `hooks.streamWrite`): it costs one scan of the text written, where pino's
 * path-based redaction cloned every logged value and every child logger's bindings (one
 * child per HTTP request) whether or not a line was written.
 */
export function secretRedactor(fields: readonly string[]): (json: string) => string {
  // In JSON an unescaped quote only delimits a string, and a string followed by a colon
  // is always a member name.
  const member = new RegExp(`"(?:${fields.join('|')})":`, 'g');
  return (json) => {
    member.lastIndex = 0;
    let match = member.exec(json);
    if (!match) return json;
    let out = '';
    let copied = 0;
    while (match) {
      const start = match.index + match[0].length;
      out += json.slice(copied, start) + CENSORED;
      copied = valueEnd(json, start);
      member.lastIndex = copied;
      match = member.exec(json);
    }
    return out + json.slice(copied);
  };
}
