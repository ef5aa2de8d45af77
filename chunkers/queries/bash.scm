; Bash and POSIX shell (.sh .bash .zsh, and sh/bash/zsh/dash/ksh shebangs): what nav chunks and links
; (contract: chunkers/queries/README.md).

; ---- definitions
(function_definition name: (word) @name body: (_) @body) @definition.function
(program (variable_assignment name: (variable_name) @name) @definition.constant)
(program (declaration_command (variable_assignment name: (variable_name) @name)) @definition.constant)

; ---- sourced files
(program (command name: (command_name (word) @_source) argument: (word) @import.source
  (#match? @_source "^(source|\\.)$")) @import)

; ---- comments travel with the definition below them
(comment) @attach

; ---- references
(command name: (command_name (word) @reference.call))
(expansion (variable_name) @reference.name)
(simple_expansion (variable_name) @reference.name)
