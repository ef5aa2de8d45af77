; The symbol graph of one Python file (navigator.index.graph): which identifiers define something and
; which use something. Capture names are <role>.<kind>; a node captured twice keeps the first role in
; navigator.index.graph.CAPTURE_PRIORITY (a call's name is a call, not also a plain name use).

; ---- definitions
(class_definition name: (identifier) @def.class)
(function_definition name: (identifier) @def.function)
(module (expression_statement (assignment left: (identifier) @def.constant)))
(module (expression_statement (assignment left: (pattern_list (identifier) @def.constant))))
(class_definition body: (block (expression_statement (assignment left: (identifier) @def.constant))))

; ---- references
(class_definition superclasses: (argument_list (identifier) @ref.base))
(class_definition superclasses: (argument_list (attribute attribute: (identifier) @ref.base)))
(call function: (identifier) @ref.call)
(call function: (attribute attribute: (identifier) @ref.call))
(decorator (identifier) @ref.call)
(decorator (attribute attribute: (identifier) @ref.call))
(attribute attribute: (identifier) @ref.attr)
(identifier) @ref.name

; ---- imports (their names are read from the statement's fields)
(import_statement) @import.statement
(import_from_statement) @import.statement
