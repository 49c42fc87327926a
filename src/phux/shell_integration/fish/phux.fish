# phux shell integration for fish: OSC 133 prompt/command marks, OSC 7 cwd.
# The phux server starts an interactive fish with `--init-command 'source
# <this file>'`, which fish runs after the user's config.fish and conf.d, so
# the user's prompt is defined by then; nothing in the user's files changes.
#
# Bytes (spec/shell-integration.md): `133;C;cmdline_url=<command>` on
# fish_preexec, `133;D;<status>` on fish_postexec, then before each prompt
# `7;file://host/cwd` and `133;A`; fish_prompt is wrapped to end with `133;B`.
# fish has no continuation prompt (a multi-line command is edited in place).

# The pane's key signs every mark (spec/shell-integration.md, "Signed marks"):
# kept in an unexported global, so commands never inherit it.
if set -q _PHUX_KEY
    set -g __phux_k $_PHUX_KEY
    set -e _PHUX_KEY
end

if status is-interactive; and not set -q __phux_loaded; and set -q __phux_k; and test "$PHUX_SHELL_INTEGRATION" = 0
    # The user's config turned the integration off: no prompt marks will come.
    printf '\e]133;I;off;phux_k=%s\a' $__phux_k
else if status is-interactive; and not set -q __phux_loaded; and test "$PHUX_SHELL_INTEGRATION" != 0
    set -g __phux_loaded 1
    set -q __phux_k; or set -g __phux_k ''
    set -g __phux_ran

    function __phux_preexec --on-event fish_preexec
        set -g __phux_ran 1
        # fish's url style keeps "/", which is not an RFC 3986 unreserved byte.
        printf '\e]133;C;cmdline_url=%s;phux_k=%s\a' (string escape --style=url -- $argv[1] | string replace -a / %2F) $__phux_k
    end

    # fish runs an event's handlers in the order they were defined, and this file runs
    # after config.fish: a user's fish_preexec handler that takes long (one that waits
    # for a job) left the command's start unmarked meanwhile, fish quiet and holding its
    # tty as at its editor, which `run` took for an unfinished line. Theirs are defined
    # again, after ours, so that C comes first (spec/shell-integration.md, fish).
    for __phux_h in (functions --handlers-type generic | string replace -rf '^fish_preexec (\S+)$' '$1')
        test $__phux_h = __phux_preexec; or functions $__phux_h | source
    end
    set -e __phux_h

    function __phux_postexec --on-event fish_postexec
        set -l ret $status
        if set -q __phux_ran[1]
            set -g __phux_ran
            printf '\e]133;D;%s;phux_k=%s\a' $ret $__phux_k
        end
    end

    # Event handlers leave $status and $pipestatus alone for the prompt function.
    function __phux_prompt_start --on-event fish_prompt
        printf '\e]7;file://%s%s\a' $hostname (string escape --style=url -- $PWD)
        printf '\e]133;A;phux_k=%s\a' $__phux_k
        __phux_wrap_prompt
    end

    # Wraps the user's fish_prompt (again, if a theme redefined it) so that it
    # ends with the B mark; the user's function runs first and sees $status.
    function __phux_wrap_prompt
        if not string match -q '*__phux_user_prompt*' -- (functions fish_prompt 2>/dev/null)
            functions -e __phux_user_prompt
            if functions -q fish_prompt
                functions -c fish_prompt __phux_user_prompt
            else
                function __phux_user_prompt
                end
            end
            function fish_prompt
                __phux_user_prompt
                printf '\e]133;B;phux_k=%s\a' $__phux_k
            end
        end
    end
end
