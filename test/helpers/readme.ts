/**
 * The shell commands a README shows, as its reader sees them: every line of its `sh` blocks
 * (comment lines aside), and every inline code span outside the blocks that starts with a
 * program and has an argument (`npm test`, `cat list.csv | mailverdict batch -`). A span
 * that names a command without running anything (`the mailverdict command`, `serve --db`) is
 * not one: it starts with no program, or has no argument.
 */
export interface ReadmeCommand {
  /** The command as the README writes it, trimmed (a block line keeps its comment). */
  readonly text: string;
  readonly where: 'block' | 'inline';
  /** 1-based line of the README. */
  readonly line: number;
}

const PROGRAM =
  /^(?:[A-Z_]+=\S+ )*(?:mailverdict|npm|npx|node|redis-server|docker|sudo|bash|cat|export|git|mkdir|cd|curl) \S/;

export function readmeCommands(readme: string): ReadmeCommand[] {
  const commands: ReadmeCommand[] = [];
  let fence: string | undefined;
  // The text outside fenced blocks, line for line (a block's lines left empty).
  const prose = readme.split('\n').map((line, i) => {
    const opening = /^```(\w*)/.exec(line);
    if (opening !== null) {
      fence = fence === undefined ? (opening[1] as string) : undefined;
      return '';
    }
    if (fence === undefined) return line;
    const text = line.trim();
    if (fence === 'sh' && text !== '' && !text.startsWith('#')) {
      commands.push({ text, where: 'block', line: i + 1 });
    }
    return '';
  });
  const outside = prose.join('\n');
  for (const match of outside.matchAll(/`([^`]+)`/g)) {
    // A span may break across lines: the reader sees one space there.
    const text = (match[1] as string).replace(/\s+/g, ' ').trim();
    if (!PROGRAM.test(text)) continue;
    const line = outside.slice(0, match.index).split('\n').length;
    commands.push({ text, where: 'inline', line });
  }
  return commands.sort((a, b) => a.line - b.line);
}

/** A command without its trailing comment, spaces collapsed: what the tables below key by. */
export function commandKey(text: string): string {
  let quote: string | undefined;
  let end = text.length;
  for (let i = 0; i < text.length; i++) {
    const char = text[i] as string;
    if (quote !== undefined) {
      if (char === quote) quote = undefined;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === '#' && i > 0 && /\s/.test(text[i - 1] as string)) {
      end = i;
      break;
    }
  }
  return text.slice(0, end).trim().split(/\s+/).join(' ');
}

/** The lines of the fenced block that follows `marker` in the README. */
export function blockAfter(readme: string, marker: string): string[] {
  const from = readme.indexOf(marker);
  if (from < 0) throw new Error(`the README no longer says ${JSON.stringify(marker)}`);
  const open = readme.indexOf('```', from);
  const start = readme.indexOf('\n', open) + 1;
  const end = readme.indexOf('\n```', start);
  return readme.slice(start, end).split('\n');
}
