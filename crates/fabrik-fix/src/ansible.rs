//! A plan as an Ansible playbook: one play per node (matched on `inventory_hostname`, or on
//! `-e fabrik_node=NAME`), one task per check, command and file, ansible.builtin modules
//! only. Commands are `argv` lists (no shell); every value is an `!unsafe` scalar, which
//! Ansible never templates. Tasks that need a drained node run only with
//! `-e fabrik_drained=true`.

use std::fmt::Write as _;

use fabrik_doctor::remedy::{Op, Read, Risk};

use crate::quote::{yaml, yaml_text, Refused};
use crate::{Plan, Step};

/// The playbook for every node with steps.
pub fn render(plan: &Plan) -> Result<String, Refused> {
    let mut y = String::from("---\n");
    crate::outline::title(&mut y, plan);
    y.push_str("# Tasks that need a drained node run only with -e fabrik_drained=true.\n");
    let nodes = plan.nodes_with_steps();
    if nodes.is_empty() {
        y.push_str("- name: 'fabrik fix: nothing to change'\n  hosts: all\n  gather_facts: false\n  tasks: []\n");
        return Ok(y);
    }
    for node in nodes {
        let _ = writeln!(y, "- name: {}", yaml(&format!("fabrik fix: {node}"))?);
        y.push_str("  hosts: all\n  become: true\n  gather_facts: false\n  vars:\n");
        let _ = writeln!(y, "    fabrik_node: {}", yaml(node)?);
        y.push_str("    fabrik_drained: false\n  tasks:\n");
        y.push_str("    - name: 'fabrik fix: steps of this node'\n      when: inventory_hostname == fabrik_node\n      block:\n");
        for step in plan.steps_of(node) {
            step_tasks(&mut y, step)?;
        }
        crate::outline::manual(&mut y, plan, node, "        ");
    }
    Ok(y)
}

fn argv_list(argv: &[String]) -> Result<String, Refused> {
    let items: Result<Vec<String>, Refused> = argv.iter().map(|a| yaml(a)).collect();
    Ok(format!("[{}]", items?.join(", ")))
}

/// A task at block level (8 spaces), `lines` under its name, each at 10 spaces.
fn task(y: &mut String, name: &str, lines: &[String]) -> Result<(), Refused> {
    let _ = writeln!(y, "        - name: {}", yaml(name)?);
    for l in lines {
        let _ = writeln!(y, "          {l}");
    }
    Ok(())
}

fn step_tasks(y: &mut String, step: &Step) -> Result<(), Refused> {
    let id = &step.id;
    let title = format!(
        "{} {}: {} -> {}",
        id,
        step.rules.join(" "),
        step.setting,
        step.target
    );
    let mut when: Vec<String> = vec![];
    if step.risk == Risk::NeedsDrain {
        when.push("fabrik_drained | bool".into());
    }
    let apply = step.change.apply();
    let mut check_vars: Vec<String> = vec![];
    if !apply.is_empty() {
        match step.change.read() {
            Read::File { path } => {
                let mut l = vec![
                    "ansible.builtin.command:".to_string(),
                    format!("  argv: {}", argv_list(&["cat".into(), path])?),
                    format!("register: fabrik_{id}_now"),
                    "changed_when: false".into(),
                    "failed_when: false".into(),
                ];
                l.extend(when_lines(&when));
                task(y, &format!("{title} (read)"), &l)?;
                when.push(format!("fabrik_{id}_now.stdout != fabrik_{id}_target"));
                check_vars.push(format!(
                    "fabrik_{id}_target: {}",
                    yaml(&crate::script::read_target(step))?
                ));
            }
            Read::Exists { path } => {
                let mut l = vec![
                    "ansible.builtin.stat:".to_string(),
                    format!("  path: {}", yaml(&path)?),
                    format!("register: fabrik_{id}_now"),
                ];
                l.extend(when_lines(&when));
                task(y, &format!("{title} (read)"), &l)?;
                when.push(format!("not fabrik_{id}_now.stat.exists"));
            }
            Read::Mstconfig { .. } | Read::Probed => {}
        }
        for op in apply {
            let mut l = match op {
                Op::Run { argv } => vec![
                    "ansible.builtin.command:".to_string(),
                    format!("  argv: {}", argv_list(&argv)?),
                ],
                Op::Write { path, value } => vec![
                    "ansible.builtin.command:".to_string(),
                    format!("  argv: {}", argv_list(&["tee".into(), path])?),
                    format!("  stdin: {}", yaml(&value)?),
                ],
            };
            l.extend(when_lines(&when));
            if !check_vars.is_empty() {
                l.push("vars:".into());
                l.extend(check_vars.iter().map(|v| format!("  {v}")));
            }
            task(y, &title, &l)?;
        }
    }
    let drain_only: Vec<String> = if step.risk == Risk::NeedsDrain {
        vec!["fabrik_drained | bool".into()]
    } else {
        vec![]
    };
    for (k, f) in step.change.persist().iter().enumerate() {
        let mut content = f.lines.join("\n");
        content.push('\n');
        // The file's lines are checked plain text (Change::check); the newlines between them
        // are the only control characters, written as YAML's escaped double-quoted form.
        let mut l = vec![
            "ansible.builtin.copy:".to_string(),
            format!("  dest: {}", yaml(&f.path)?),
            format!("  content: {}", yaml_text(&content)?),
            "  mode: '0644'".into(),
            format!("register: fabrik_{id}_file{k}"),
        ];
        l.extend(when_lines(&drain_only));
        task(y, &format!("{id} keep: {}", f.path), &l)?;
        for t in &f.then {
            let mut l = vec![
                "ansible.builtin.command:".to_string(),
                format!("  argv: {}", argv_list(t)?),
            ];
            let mut w = drain_only.clone();
            w.push(format!("fabrik_{id}_file{k}.changed"));
            l.extend(when_lines(&w));
            task(y, &format!("{id} reload: {}", t.join(" ")), &l)?;
        }
    }
    Ok(())
}

fn when_lines(when: &[String]) -> Vec<String> {
    match when {
        [] => vec![],
        [one] => vec![format!("when: {one}")],
        many => {
            let mut v = vec!["when:".to_string()];
            v.extend(many.iter().map(|w| format!("  - {w}")));
            v
        }
    }
}
