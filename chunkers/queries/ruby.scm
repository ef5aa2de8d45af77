; Ruby (.rb .rake .gemspec, Rakefile, Gemfile, ruby shebangs): what nav chunks and links
; (contract: chunkers/queries/README.md). Qualified names use `::` for nesting and `.` is kept for methods.

; ---- definitions
(class name: [(constant) (scope_resolution)] @name body: (body_statement)? @body) @definition.class
(singleton_class value: (_) @name body: (body_statement)? @body) @definition.class
(module name: [(constant) (scope_resolution)] @name body: (body_statement)? @body) @definition.module
(method name: (_) @name body: (body_statement)? @body) @definition.function
(singleton_method name: (_) @name body: (body_statement)? @body) @definition.function
(program (assignment left: (constant) @name) @definition.constant)
(body_statement (assignment left: (constant) @name) @definition.constant)

; ---- requires
(program (call method: (identifier) @_require arguments: (argument_list (string (string_content) @import.source)))
  @import (#match? @_require "^(require|require_relative|load|autoload)$"))

; ---- comments travel with the definition below them
(comment) @attach

; ---- references
(call receiver: (constant) @qualifier method: (identifier) @reference.call)
(call method: (identifier) @reference.call)
(superclass (constant) @reference.base)
(superclass (scope_resolution name: (constant) @reference.base))
(call method: (identifier) @_include arguments: (argument_list (constant) @reference.base) (#match? @_include "^(include|extend|prepend)$"))
(scope_resolution scope: (constant) @qualifier name: (constant) @reference.type)
(constant) @reference.type
(identifier) @reference.name
