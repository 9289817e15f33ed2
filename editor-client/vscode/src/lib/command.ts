// Working out how to start the server from the settings, and whether its program exists.

import * as fs from 'fs';
import * as path from 'path';
import * as os from 'os';

export interface ServerSettings {
  serverCommand?: unknown;
  pythonPath?: unknown;
}

export interface ServerLaunch {
  command: string;
  args: string[];
  /** Human-readable description for messages. */
  display: string;
  viaPython: boolean;
}

export const DEFAULT_SERVER_COMMAND = ['session-lsp', 'serve', '--stdio'];

export function expandHome(p: string, home = os.homedir()): string {
  if (p === '~') {
    return home;
  }
  if (p.startsWith('~/') || p.startsWith('~\\')) {
    return path.join(home, p.slice(2));
  }
  return p;
}

function quoteForDisplay(a: string): string {
  return /^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`;
}

export function serverLaunch(settings: ServerSettings): ServerLaunch {
  const py = typeof settings.pythonPath === 'string' ? settings.pythonPath.trim() : '';
  let argv: string[];
  let viaPython = false;
  if (py) {
    argv = [expandHome(py), '-m', 'server.cli', 'serve', '--stdio'];
    viaPython = true;
  } else if (
    Array.isArray(settings.serverCommand) &&
    settings.serverCommand.length > 0 &&
    settings.serverCommand.every((a) => typeof a === 'string') &&
    (settings.serverCommand[0] as string).trim() !== ''
  ) {
    argv = settings.serverCommand as string[];
    argv = [expandHome(argv[0]), ...argv.slice(1)];
  } else if (typeof settings.serverCommand === 'string' && settings.serverCommand.trim() !== '') {
    // Tolerate a plain string: split on whitespace.
    argv = settings.serverCommand.trim().split(/\s+/);
    argv = [expandHome(argv[0]), ...argv.slice(1)];
  } else {
    argv = DEFAULT_SERVER_COMMAND.slice();
  }
  return { command: argv[0], args: argv.slice(1), display: argv.map(quoteForDisplay).join(' '), viaPython };
}

function isExecutableFile(p: string): boolean {
  try {
    const st = fs.statSync(p);
    if (!st.isFile()) {
      return false;
    }
    if (process.platform === 'win32') {
      return true;
    }
    fs.accessSync(p, fs.constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The full path of `command` (searched on PATH unless it contains a separator), or undefined. */
export function resolveExecutable(
  command: string,
  envPath = process.env.PATH ?? '',
  cwd = process.cwd(),
): string | undefined {
  if (!command) {
    return undefined;
  }
  const exts =
    process.platform === 'win32' ? (process.env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').concat(['']) : [''];
  if (command.includes('/') || (process.platform === 'win32' && command.includes('\\'))) {
    const full = path.resolve(cwd, command);
    for (const ext of exts) {
      if (isExecutableFile(full + ext)) {
        return full + ext;
      }
    }
    return undefined;
  }
  for (const dir of envPath.split(path.delimiter)) {
    if (!dir) {
      continue;
    }
    for (const ext of exts) {
      const full = path.join(dir, command + ext);
      if (isExecutableFile(full)) {
        return full;
      }
    }
  }
  return undefined;
}

export const INSTALL_HINT =
  "Install it from a checkout of session-lsp with 'pip install /path/to/session-lsp' (or pipx) into Python 3.11+, " +
  "then put 'session-lsp' on the PATH, or set 'sessionLsp.serverCommand' to its full path, " +
  "or 'sessionLsp.pythonPath' to the interpreter that has it (or select that interpreter in the Python extension).";

export function missingServerMessage(launch: ServerLaunch, detail?: string): string {
  const what = launch.viaPython
    ? `Python interpreter '${launch.command}' was not found or cannot import session-lsp's server`
    : `server command '${launch.command}' was not found`;
  return `Session LSP: the language server is not installed or could not start (${what}${detail ? `: ${detail}` : ''}). ${INSTALL_HINT}`;
}

/** The effective projects folder: the setting, else $CLAUDE_CONFIG_DIR/projects, else ~/.claude/projects. */
export function effectiveProjectsDir(setting: unknown, env: NodeJS.ProcessEnv = process.env, home = os.homedir()): string {
  if (typeof setting === 'string' && setting.trim() !== '') {
    return path.resolve(expandHome(setting.trim(), home));
  }
  const cfg = env.CLAUDE_CONFIG_DIR;
  if (cfg && cfg.trim() !== '') {
    return path.join(path.resolve(expandHome(cfg.trim(), home)), 'projects');
  }
  return path.join(home, '.claude', 'projects');
}

/** Whether `file` lies inside `dir` (both absolute). */
export function isInside(file: string, dir: string): boolean {
  const rel = path.relative(dir, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

/** Turns work-done progress messages into the reply so far: accepts deltas or cumulative text. */
export function accumulateProgress(sofar: string, message: string | undefined): string {
  if (!message) {
    return sofar;
  }
  if (sofar && message.startsWith(sofar)) {
    return message;
  }
  return sofar + message;
}

/** The version `session-lsp --version` printed, or undefined when the output is not ours. */
export function sessionLspVersion(stdout: string): string | undefined {
  const m = /^session-lsp (\d[^\s]*)\s*$/.exec(stdout.trim());
  return m ? m[1] : undefined;
}
