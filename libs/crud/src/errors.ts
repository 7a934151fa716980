import { AppError, defineMessages } from '@app/platform';

defineMessages({
  en: {
    'crud.notFound': 'No {domain} has the id {id}.',
    'crud.conflict': 'The {domain} was not saved: another {domain} already has the same {fields}.',
    'crud.nulCharacter': 'Must not contain the NUL character (U+0000).',
  },
  'pt-BR': {
    'crud.notFound': 'Nenhum registro de {domain} tem o id {id}.',
    'crud.conflict': 'O registro de {domain} não foi salvo: outro registro de {domain} já tem o mesmo valor em {fields}.',
    'crud.nulCharacter': 'Não pode conter o caractere NUL (U+0000).',
  },
  es: {
    'crud.notFound': 'Ningún registro de {domain} tiene el id {id}.',
    'crud.conflict': 'El registro de {domain} no se guardó: otro registro de {domain} ya tiene el mismo valor en {fields}.',
    'crud.nulCharacter': 'No debe contener el carácter NUL (U+0000).',
  },
  fr: {
    'crud.notFound': "Aucun enregistrement {domain} n'a l'identifiant {id}.",
    'crud.conflict': "L'enregistrement {domain} n'a pas été enregistré : un autre enregistrement {domain} a déjà la même valeur pour {fields}.",
    'crud.nulCharacter': 'Ne doit pas contenir le caractère NUL (U+0000).',
  },
  de: {
    'crud.notFound': 'Kein Datensatz vom Typ {domain} hat die ID {id}.',
    'crud.conflict': 'Der Datensatz vom Typ {domain} wurde nicht gespeichert: ein anderer hat bereits denselben Wert für {fields}.',
    'crud.nulCharacter': 'Darf das NUL-Zeichen (U+0000) nicht enthalten.',
  },
});

/** No record of the domain has this id (404). */
export const recordNotFound = (domain: string, id: string) => new AppError('CRUD_NOT_FOUND', 404, 'crud.notFound', { domain, id });

/**
 * The insert or update produced no row because a unique value is taken (422). The fields
 * named are the domain's unique columns: Postgres' ON CONFLICT DO NOTHING does not say which.
 */
export const uniqueConflict = (domain: string, fields: readonly string[]) =>
  new AppError('CRUD_CONFLICT', 422, 'crud.conflict', { domain, fields: fields.join(', ') || 'id' });
