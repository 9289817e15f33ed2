/**
 * The working directory a turn of "Run Agent Turn" is given (`sessions/runTurn`'s `cwd`): the root of the
 * turn's tools. A session of a session store records a cwd written by whoever can insert into the shared
 * database (`~/.ssh`, say), so it is never sent as the person's choice: a store session's turn works in the
 * window's folder, and without one it is not run. A local session's recorded cwd is left to the server
 * (no `cwd` sent), which refuses one too wide, or one of a copy written from a store.
 */

export interface TurnCwdInput {
  /** A session is continued (else a new one starts). */
  hasSession: boolean;
  /** The cwd the session records (transcript data). */
  recordedCwd?: string;
  /** The session is in a session store (`sessions/list`'s `storeId`). */
  storeId?: string;
  /** The window's first workspace folder: a folder the person opened. */
  workspaceFolder?: string;
  home: string;
  isDirectory: (path: string) => boolean;
}

export type TurnCwd = { send: string | undefined; shown: string } | { error: string };

export function turnCwd(i: TurnCwdInput): TurnCwd {
  if (i.storeId) {
    if (!i.workspaceFolder) {
      return {
        error:
          'Open the folder the agent should work in first: a session of a session store runs in the window’s folder, ' +
          'never in the working directory its rows record (whoever can write to the store wrote it).',
      };
    }
    return { send: i.workspaceFolder, shown: i.workspaceFolder };
  }
  const recorded = i.recordedCwd && i.isDirectory(i.recordedCwd) ? i.recordedCwd : undefined;
  const shown = recorded ?? i.workspaceFolder ?? i.home;
  return { send: !i.hasSession || !i.recordedCwd ? shown : undefined, shown };
}
