# phux shell integration for bash: OSC 133 prompt/command marks, OSC 7 cwd.
#
# The phux server starts an interactive bash as `bash --posix [--login] [-i]`
# with ENV naming this file, because that is the one startup file a posix-mode
# bash reads for login and non-login shells alike. This file leaves posix mode
# at once, puts ENV back, loads the user's own startup files exactly as bash
# would have, then adds the hooks. Nothing here edits the user's files.
#
# Bytes (spec/shell-integration.md): before each prompt `133;D;<status>` when a
# command ran, `7;file://host/cwd`; PS1 is wrapped in `133;A` .. `133;B`, PS2
# in `133;A;k=s` .. `133;B`; PS0 prints `133;C;cmdline_url=<command>`. The D
# and the hooks' re-install also live in PS1 and PS0, so that replacing
# PROMPT_COMMAND (a bashrc sourced again) does not lose them.

builtin set +o posix
# The pane's key signs every mark (spec/shell-integration.md, "Signed marks"):
# kept in an unexported variable, so the user's files and commands never inherit it.
_phux_k=${_PHUX_KEY-${_phux_k-}}
builtin unset _PHUX_KEY
# Announce the integration before the user's files run: a client then waits for
# the first prompt instead of guessing from quiet time.
if [[ $- == *i* && -n $_phux_k ]]; then builtin printf '\e]133;I;start;phux_k=%s\a' "$_phux_k"; fi
if [[ -n ${_PHUX_ENV+x} ]]; then
    builtin export ENV="$_PHUX_ENV"
else
    builtin unset ENV
fi
_phux_flags=${_PHUX_BASH_FLAGS-}
_phux_rcfile=${_PHUX_BASH_RCFILE-}
builtin unset _PHUX_ENV _PHUX_BASH_FLAGS _PHUX_BASH_RCFILE
# Leaving posix mode does not undo all it changed; put back bash's own defaults
# where the server saw the user had not chosen them (HISTFILE, BASHOPTS).
if [[ $_phux_flags != *keep_errexit* ]]; then builtin shopt -u inherit_errexit; fi
if [[ $_phux_flags == *histfile* ]]; then HISTFILE=~/.bash_history; fi

# The user's startup files, at top level (a `declare` in them must stay global).
if builtin shopt -q login_shell; then
    if [[ $_phux_flags != *noprofile* ]]; then
        if [[ -r /etc/profile ]]; then builtin source /etc/profile; fi
        for _phux_f in ~/.bash_profile ~/.bash_login ~/.profile; do
            if [[ -r $_phux_f ]]; then
                builtin source "$_phux_f"
                break
            fi
        done
    fi
elif [[ $_phux_flags != *norc* ]]; then
    if [[ -n $_phux_rcfile ]]; then
        if [[ -r $_phux_rcfile ]]; then builtin source "$_phux_rcfile"; fi
    else
        # Debian-style builds read this system file before ~/.bashrc themselves.
        if [[ -r /etc/bash.bashrc ]]; then builtin source /etc/bash.bashrc; fi
        if [[ -r ~/.bashrc ]]; then builtin source ~/.bashrc; fi
    fi
fi
\builtin unset _phux_f _phux_flags _phux_rcfile

# The user's aliases (for local, printf, history...) must not reach the
# definitions below: aliases are expanded when a compound command is read, so
# this is turned off before the block is, and back on after it.
if \builtin shopt -q expand_aliases; then _phux_ea=1; else _phux_ea=; fi
\builtin shopt -u expand_aliases

# A user file may have turned the integration off, or this may be a second load.
if [[ ${PHUX_SHELL_INTEGRATION-} != 0 && -z ${_phux_loaded-} && $- == *i* ]]; then
_phux_loaded=1
_phux_ran=0
_phux_status=0
_phux_cwd=
_phux_cwd_url=
_phux_hist=
_phux_empty=

# Percent-encode $1 into _phux_url, keeping RFC 3986 unreserved bytes and the
# characters in $2 (a bracket expression body, e.g. "/" for paths).
_phux_urlencode() {
    local LC_ALL=C s=$1 out= c i
    if [[ $s != *[!A-Za-z0-9._~$2-]* ]]; then
        _phux_url=$s
        return
    fi
    for ((i = 0; i < ${#s}; i++)); do
        c=${s:i:1}
        case $c in
        [A-Za-z0-9._~$2-]) out+=$c ;;
        *) builtin printf -v c '%%%02X' "'$c"; out+=$c ;;
        esac
    done
    _phux_url=$out
}

# Runs first in PROMPT_COMMAND: the status of the command just finished.
_phux_prompt_start() {
    _phux_status=$?
    if ((_phux_ran)); then
        builtin printf '\e]133;D;%s;phux_k=%s\a' "$_phux_status" "$_phux_k"
        _phux_ran=0
    fi
    if [[ $PWD != "$_phux_cwd" ]]; then
        _phux_urlencode "$PWD" /
        _phux_cwd=$PWD
        _phux_cwd_url=$_phux_url
    fi
    builtin printf '\e]7;file://%s%s\a' "$HOSTNAME" "$_phux_cwd_url"
    _phux_hist=$HISTCMD
    # The user's own hooks that follow see the command's status.
    return "$_phux_status"
}

# Runs in a subshell from PS0, after bash has read a command line and before
# it runs: the history entry is the command line, when bash recorded one.
_phux_preexec() {
    local h
    # A C mark only when a D will follow it, else it would read as a command
    # that never ends: the D comes from the prompt hooks or from PS1's mark.
    _phux_marking || return 0
    if [[ $1 != "$_phux_hist" ]]; then
        h=$(HISTTIMEFORMAT= \builtin history 1)
        h=${h#*[0-9][ *] }
        _phux_urlencode "$h" ''
        builtin printf '\e]133;C;cmdline_url=%s;phux_k=%s\a' "$_phux_url" "$_phux_k"
    else
        # Not in history (ignorespace, HISTIGNORE, history off): no text to give.
        builtin printf '\e]133;C;phux_k=%s\a' "$_phux_k"
    fi
}

# What keeps the hooks alive when the user replaces PROMPT_COMMAND wholesale
# (`PROMPT_COMMAND=...` in a bashrc sourced again, `unset PROMPT_COMMAND`) is
# in PS0 and PS1, whose expansions run in the shell itself at every command
# and every prompt, without a fork:
# - D is in PS1's A piece too, printed there with PS1's `$?` (the command's:
#   bash restores it after PROMPT_COMMAND) when the prompt hook did not print
#   it first (_phux_ran is then still 1);
# - `${PROMPT_COMMAND:=_phux_prompt_end}` puts the end hook back when
#   PROMPT_COMMAND is unset or empty, and the end hook puts back the rest. It
#   sits in the key of an empty associative array, so that it prints nothing.
# A string assigned to an array PROMPT_COMMAND replaces only its element 0
# (bash >= 5.1): the user's own, so that ours stay.
builtin declare -gA _phux_none
_phux_d=('' $'\e]133;D;@;phux_k='$_phux_k$'\a')
_phux_keep='${_phux_none["${PROMPT_COMMAND:=_phux_prompt_end}"]-}'
_phux_a='\['$_phux_keep'${_phux_d[_phux_ran]/@/$?}${_phux_empty:0:$((_phux_ran=0))}'$'\e]133;A;phux_k='$_phux_k$'\a\\]'
_phux_a2=$'\[\e]133;A;k=s;phux_k='$_phux_k$'\a\]'
_phux_b=$'\[\e]133;B;phux_k='$_phux_k$'\a\]'
# The arithmetic sets _phux_ran in this shell (the substitution runs in a subshell).
_phux_ps0=$_phux_keep'${_phux_empty:0:$((_phux_ran=1,0))}$(_phux_preexec "$HISTCMD")'

# bash-preexec keeps its __bp_interactive_mode last (its DEBUG trap takes the
# first command after it for the user's), and installs itself from a last
# entry calling __bp_install: the end hook goes before either.
_phux_is_tail() {
    [[ $1 == __bp_interactive_mode || $1 == *__bp_install* ]]
}

# Both hooks present, as whole lines of PROMPT_COMMAND (string or array).
_phux_installed() {
    local IFS=$'\n'
    local all=$'\n'"${PROMPT_COMMAND[*]-}"$'\n'
    [[ $all == *$'\n'_phux_prompt_start$'\n'* && $all == *$'\n'_phux_prompt_end$'\n'* ]]
}

# A D mark will follow the command about to run (see _phux_preexec).
_phux_marking() {
    local IFS=$'\n'
    [[ $'\n'"${PROMPT_COMMAND[*]-}"$'\n' == *$'\n'_phux_prompt_end$'\n'* || $PS1 == *"$_phux_a"* ]]
}

# Puts the hooks back into PROMPT_COMMAND, ours removed from it first. With
# arrays (bash >= 5.1) PROMPT_COMMAND becomes one: the user's first element
# (a string value is one) stays first, so that a string assigned later
# replaces it as it would without phux; _phux_prompt_start comes next and
# _phux_prompt_end last. Older bash: lines of a string, ours first and last.
_phux_install_prompt_command() {
    local e last
    local -a pc=() tail=()
    if ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)); then
        if [[ -v PROMPT_COMMAND && ${PROMPT_COMMAND@a} == *a* ]]; then
            for e in "${PROMPT_COMMAND[@]}"; do
                [[ $e == _phux_prompt_start || $e == _phux_prompt_end ]] || pc+=("$e")
            done
        else
            e=$'\n'${PROMPT_COMMAND-}$'\n'
            e=${e//$'\n'_phux_prompt_start$'\n'/$'\n'}
            e=${e//$'\n'_phux_prompt_end$'\n'/$'\n'}
            e=${e#$'\n'}
            e=${e%$'\n'}
            last=${e##*$'\n'}
            if [[ $e == *$'\n'* ]] && _phux_is_tail "$last"; then
                pc=("${e%$'\n'"$last"}" "$last")
            elif [[ -n $e ]]; then
                pc=("$e")
            fi
        fi
        if ((${#pc[@]})) && _phux_is_tail "${pc[-1]}"; then
            tail=("${pc[-1]}")
            unset 'pc[-1]'
        fi
        if ((${#pc[@]})); then
            PROMPT_COMMAND=("${pc[0]}" _phux_prompt_start "${pc[@]:1}" _phux_prompt_end "${tail[@]}")
        else
            PROMPT_COMMAND=(_phux_prompt_start _phux_prompt_end "${tail[@]}")
        fi
        return
    fi
    e=$'\n'${PROMPT_COMMAND-}$'\n'
    e=${e//$'\n'_phux_prompt_start$'\n'/$'\n'}
    e=${e//$'\n'_phux_prompt_end$'\n'/$'\n'}
    e=${e#$'\n'}
    e=${e%$'\n'}
    last=${e##*$'\n'}
    if [[ -n $e ]] && _phux_is_tail "$last"; then
        e=${e%"$last"}
        PROMPT_COMMAND=_phux_prompt_start$'\n'$e'_phux_prompt_end'$'\n'$last
    else
        PROMPT_COMMAND=_phux_prompt_start$'\n'${e:+$e$'\n'}_phux_prompt_end
    fi
}

# Runs last in PROMPT_COMMAND: after the user's hooks have built this prompt
# (starship and the like rewrite PS1 every time), wrap it again if needed.
_phux_prompt_end() {
    if [[ $PS1 != "$_phux_a"*"$_phux_b" ]]; then
        PS1=$_phux_a${PS1#"$_phux_a"}
        PS1=${PS1%"$_phux_b"}$_phux_b
    fi
    if [[ $PS2 != "$_phux_a2"*"$_phux_b" ]]; then
        PS2=$_phux_a2${PS2#"$_phux_a2"}
        PS2=${PS2%"$_phux_b"}$_phux_b
    fi
    if [[ ${PS0-} != *"$_phux_ps0" ]]; then
        PS0=${PS0-}
        PS0=${PS0//"$_phux_ps0"/}$_phux_ps0
    fi
    # Put back only what is gone: bash-preexec and others order the entries
    # themselves, and moving ours back would fight them at every prompt.
    _phux_installed || _phux_install_prompt_command
    return "$_phux_status"
}

_phux_install_prompt_command
elif [[ -z ${_phux_loaded-} && $- == *i* && -n $_phux_k ]]; then
    # A user file turned the integration off: say so, no prompt marks will come.
    builtin printf '\e]133;I;off;phux_k=%s\a' "$_phux_k"
fi
if [[ -n $_phux_ea ]]; then \builtin shopt -s expand_aliases; fi
\builtin unset _phux_ea
