/**
 * A worker connection's text cut into frames (one JSON object a line, docs/worker-protocol.md §2),
 * each bounded in size while it is still being read.
 *
 * @module
 */

/**
 * Returns a function that takes the connection's decoded text as it arrives and hands each complete
 * line to `onFrame`. A frame longer than `limit()` characters (asked as each frame is read; a UTF-8
 * frame has at least as many bytes, so a frame within the limit in bytes is never refused) goes to
 * `onOversize` instead, and the function returns false: reading must stop there, the rest of the
 * frame unread.
 */
export function frameSplitter(
  limit: () => number,
  onFrame: (line: string) => void,
  onOversize: (limit: number) => void,
): (text: string) => boolean {
  let parts: string[] = [];
  let size = 0;
  return (text) => {
    let newline = text.indexOf("\n");
    while (newline >= 0) {
      const most = limit();
      if (size + newline > most) {
        onOversize(most);
        return false;
      }
      parts.push(text.slice(0, newline));
      const line = parts.join("");
      parts = [];
      size = 0;
      onFrame(line);
      text = text.slice(newline + 1);
      newline = text.indexOf("\n");
    }
    if (text) {
      parts.push(text);
      size += text.length;
      const most = limit();
      if (size > most) {
        parts = [];
        onOversize(most);
        return false;
      }
    }
    return true;
  };
}
